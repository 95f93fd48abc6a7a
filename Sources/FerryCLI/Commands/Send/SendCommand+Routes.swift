import Ferry
import FerryAgent
import Foundation

/// How one `--to` receiver is reached: at the address the user named it by, through
/// discovery, or — when discovery has not found it within ``RememberedRoute/wait`` — at an
/// address it was reached at before, whichever answers first.
extension SendCommand {
  /// Where a `--to` receiver was found.
  private enum Found: Sendable {
    case discovered(DiscoveredPeer, pinned: Bool)
    case remembered(RememberedRoute.Remembered)
  }

  /// Finds the receiver `name` (meaning `reference`) and sends to it; the failure, if any,
  /// already reported to `output`.
  static func send(
    _ delivery: FerryDelivery, to name: String, as reference: PeerReference,
    finder: ReceiverFinder, browser: Browser, claimed: ClaimedReceivers,
    accepted: AcceptedKeys, ask: Bool, output: EventWriter
  ) async -> CLIFailure? {
    let knownPeers = KnownPeers()
    let found: Found
    do throws(CLIFailure) {
      if case .named(let named, let address) = try RememberedRoute.named(name, in: knownPeers) {
        return await send(
          delivery, toNamed: named, at: address, knownPeers: knownPeers, claimed: claimed,
          accepted: accepted, output: output)
      }
      found = try await locate(
        name, as: reference, finder: finder, browser: browser, deadline: delivery.deadline,
        ask: ask, knownPeers: knownPeers, output: output)
    } catch {
      output.emit(Failure(code: error.code, message: error.message, peer: name))
      return error
    }
    switch found {
    case .discovered(let target, let pinned):
      // Two --to naming the same receiver: it gets the files once.
      guard claimed.claim(target.info.fingerprint!) else { return nil }
      return await delivery.send(to: target, browser: browser, pinned: pinned)
        .map(CLIFailure.init)
    case .remembered(let route):
      guard claimed.claim(route.fingerprint) else { return nil }
      let address = route.address.description
      guard
        let failure = await delivery.send(
          toAddress: address, host: route.address.host, port: route.address.port,
          to: (name, PeerReference.fingerprint(route.fingerprint)))
      else { return nil }
      if failure.kind == .authentication,
        (try? knownPeers.forgetAddress(address, of: route.fingerprint)) == true
      {
        output.note(
          "Another key answers at \(address) now: not \(DisplayText.quoted(route.name)). "
            + "That address is forgotten.")
      }
      // Nothing was sent there (another machine has the address now, or nothing answers):
      // discovery goes on for what is left of --timeout.
      guard [.authentication, .noPeer, .invitationFailed].contains(failure.kind),
        delivery.deadline > .now
      else { return CLIFailure(failure) }
      output.note("Looking for \(DisplayText.quoted(route.name)) on this network again…")
      do throws(CLIFailure) {
        let (target, pinned) = try await finder.find(name, as: reference, ask: ask)
        return await delivery.send(to: target, browser: browser, pinned: pinned)
          .map(CLIFailure.init)
      } catch {
        return CLIFailure(failure)
      }
    }
  }

  /// The named addresses every `--to` names, in order; nil unless each names one.
  ///
  /// - Throws: ``CLIFailure`` for a named address that cannot be used, or an unreadable peers
  ///   file.
  func namedOnly(_ knownPeers: KnownPeers) throws(CLIFailure)
    -> [(KnownPeers.NamedAddress, HostPort)]?
  {
    guard !to.isEmpty else { return nil }
    var named: [(KnownPeers.NamedAddress, HostPort)] = []
    for text in to {
      guard case .named(let entry, let address) = try RememberedRoute.named(text, in: knownPeers)
      else { return nil }
      named.append((entry, address))
    }
    return named
  }

  /// Sends to a named address: pinned to its key when it has one; otherwise a first contact
  /// (the verification code is shown), whose key is then the name's.
  static func send(
    _ delivery: FerryDelivery, toNamed named: KnownPeers.NamedAddress, at address: HostPort,
    knownPeers: KnownPeers, claimed: ClaimedReceivers, accepted: AcceptedKeys,
    output: EventWriter
  ) async -> CLIFailure? {
    let key = named.fingerprint.flatMap { try? Fingerprint(parsing: $0) }
    if let key, !claimed.claim(key) { return nil }
    let failure = await delivery.send(
      toAddress: address.description, host: address.host, port: address.port,
      to: key.map { (named.name, PeerReference.fingerprint($0)) })
    if key == nil, let learnt = accepted.key(at: address.description) {
      // Named in peers.json: its key is learnt there; named in the config: peers.json names
      // it now, with its key, ahead of the config.
      if (try? knownPeers.namedAddress(named.name)) != nil {
        try? knownPeers.learnKey(learnt, ofNamed: named.name)
      } else {
        _ = try? knownPeers.addNamed(named.name, address: named.address, fingerprint: learnt)
      }
      output.note(
        "\(DisplayText.quoted(named.name)) is \(learnt.shortDescription) from now on: a "
          + "receiver with another key there is refused.")
    } else if key != nil, failure?.kind == .authentication {
      output.note(
        "If \(DisplayText.quoted(named.name)) was reinstalled, check its new key "
          + "('ferry identity' there) and name it again: ferry peers add "
          + "'\(DisplayText.escaping(named.name))' \(address) --fingerprint NEWKEY")
    }
    return failure.map(CLIFailure.init)
  }

  /// Discovery, and after ``RememberedRoute/wait`` the remembered addresses of the keys
  /// `reference` stands for, side by side: the first to find the receiver. Remembered
  /// addresses are not tried once discovery sees a receiver `reference` matches (it decides,
  /// asking the person when there are several), nor past `deadline`.
  private static func locate(
    _ name: String, as reference: PeerReference, finder: ReceiverFinder, browser: Browser,
    deadline: ContinuousClock.Instant, ask: Bool, knownPeers: KnownPeers, output: EventWriter
  ) async throws(CLIFailure) -> Found {
    let routes = RememberedRoute.remembered(for: reference, in: knownPeers)
    guard !routes.isEmpty else {
      let (target, pinned) = try await finder.find(name, as: reference, ask: ask)
      return .discovered(target, pinned: pinned)
    }
    enum Outcome: Sendable {
      case found(Found)
      case failed(CLIFailure)
      case nothing
    }
    let result = await withTaskGroup(of: Outcome.self) { group -> Result<Found, CLIFailure> in
      group.addTask {
        do throws(CLIFailure) {
          let (target, pinned) = try await finder.find(name, as: reference, ask: ask)
          return .found(.discovered(target, pinned: pinned))
        } catch {
          return .failed(error)
        }
      }
      group.addTask {
        let seen = {
          browser.peers.contains { peer in
            peer.info.fingerprint.map(reference.matchesFingerprint) == true
              || reference.matchesName(peer.name)
          }
        }
        guard (try? await Task.sleep(for: RememberedRoute.wait)) != nil, !seen(),
          deadline - .now > .zero,
          let route = await RememberedRoute.firstAnswering(routes, within: deadline - .now),
          !seen()
        else { return .nothing }
        return .found(.remembered(route))
      }
      var failure: CLIFailure?
      var pending = 2
      for await outcome in group {
        pending -= 1
        switch outcome {
        case .found(let found):
          group.cancelAll()
          return .success(found)
        case .failed(let error) where error.code != .noPeer || pending == 0:
          // What discovery found is final (an ambiguity, the person's choice), as is its
          // not finding anyone once the remembered addresses did not answer either.
          group.cancelAll()
          return .failure(error)
        case .failed(let error):
          failure = error
        case .nothing:
          if let failure { return .failure(failure) }
        }
      }
      return .failure(
        failure ?? CLIFailure(status: .noPeer, message: "no receiver found", code: .noPeer))
    }
    if case .success(.remembered(let route)) = result {
      output.note(
        "\(DisplayText.quoted(route.name)) was not found on this network; it answers at "
          + "\(route.address), where it was reached before.")
    }
    return try result.get()
  }
}
