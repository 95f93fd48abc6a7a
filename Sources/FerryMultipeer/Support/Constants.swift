import Ferry

/// The fewest peers a session holds, this one included (MultipeerConnectivity's constant).
public let kMCSessionMinimumNumberOfPeers = 2
/// The most peers a session holds, this one included: Ferry's ``Session/maximumPeers``.
public let kMCSessionMaximumNumberOfPeers = Session.maximumPeers
