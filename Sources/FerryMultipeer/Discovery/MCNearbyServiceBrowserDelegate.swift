import Foundation

/// What a browser tells its delegate, as MultipeerConnectivity's
/// `MCNearbyServiceBrowserDelegate`. Calls arrive on the browser's own serial queue.
public protocol MCNearbyServiceBrowserDelegate: NSObjectProtocol {
  /// A peer advertising the service type appeared, with the discovery info it publishes (nil
  /// when it publishes none). This peer itself is never reported.
  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?)

  /// A peer found earlier is gone (it stopped advertising or left the network).
  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID)

  /// Browsing could not start or stopped: ``MCError`` `unavailable` when avahi-daemon or the
  /// system bus is not running. Optional.
  func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: any Error)
}

extension MCNearbyServiceBrowserDelegate {
  /// Does nothing.
  public func browser(
    _ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: any Error
  ) {}
}
