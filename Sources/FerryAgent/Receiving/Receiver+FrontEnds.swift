import Ferry
import FerryLocalSend

extension Receiver {
  /// Starts the loops of `frontEnd` in `group`: what it brings is decided, what its transfers
  /// do is tracked and reported, what it meets is reported. Each decision runs on its own (a
  /// question may wait a while), until the receiver ends.
  func serve(_ frontEnd: FrontEnd, in group: inout TaskGroup<Void>) {
    switch frontEnd {
    case .ferry(let session, let advertiser):
      group.addTask { [self] in
        for await event in session.resourceEvents {
          track(event, refusalBeforeDecision: true)
        }
      }
      group.addTask { [self] in
        // A link closed on purpose (a GOODBYE, a violation) is not lost: nothing comes back.
        for await change in session.stateChanges where change.state == .notConnected {
          linkEnded(change.peer, onPurpose: change.end?.isOnPurpose == true)
        }
      }
      group.addTask { [self] in
        // Each decided on its own (the advertiser caps how many are pending); a decider that
        // asks a person asks one at a time.
        for await invitation in advertiser.invitations {
          inBackground { await self.decide(invitation, session: session) }
        }
      }
      group.addTask { [self] in
        for await offer in session.resourceOffers {
          inBackground { await self.decide(offer) }
        }
      }
      group.addTask { [self] in await follow(advertiser) }
    case .localSend(let server, let discovery, let takesUnverified):
      serve(server, in: &group)
      // Aliases announced from each address: a sender turned away in its TLS handshake is
      // named by the one its address announced (its own words: a label, never proof).
      let aliases = LocalSendAliases()
      if let discovery {
        group.addTask { [self] in
          for await sighting in discovery.sightings {
            aliases.heard(sighting.device.alias, at: sighting.address)
            emit(.localSendSeen(sighting))
          }
        }
      }
      reportRefusals(of: server, aliases: aliases, takesUnverified: takesUnverified, in: &group)
    case .web(let server, let endsAt):
      serve(server, in: &group)
      reportRefusals(of: server, aliases: LocalSendAliases(), takesUnverified: true, in: &group)
      if let endsAt {
        // A web receive ends with its link, once the session it accepted has finished its
        // uploads.
        group.addTask { [self] in
          try? await Task.sleep(until: endsAt)
          guard !Task.isCancelled else { return }
          server.stop()
          await server.waitUntilNoSession()
          guard !Task.isCancelled else { return }
          emit(.linkExpired)
          finish(.received(nil))
        }
      }
    }
  }

  /// The loops of a LocalSend (or web) server: its offers and texts decided, its files
  /// tracked.
  private func serve(_ server: LocalSendServer, in group: inout TaskGroup<Void>) {
    group.addTask { [self] in
      for await event in server.events {
        track(event, refusalBeforeDecision: false)
      }
    }
    group.addTask { [self] in
      for await incoming in server.incoming {
        inBackground {
          switch incoming {
          case .files(let offer, let sender):
            await self.decide(localSend: offer, from: sender)
          case .text(let text):
            await self.decide(localSend: text)
          }
        }
      }
    }
  }

  /// Reports the senders `server` turned away in their TLS handshake, named by the alias
  /// their address announced (in `aliases`).
  private func reportRefusals(
    of server: LocalSendServer, aliases: LocalSendAliases, takesUnverified: Bool,
    in group: inout TaskGroup<Void>
  ) {
    group.addTask { [self] in
      for await refusal in server.refusals {
        let name = aliases.alias(at: refusal.address)
        let who =
          "a LocalSend sender at \(refusal.address)"
          + (name.map { " (\(DisplayText.quoted($0)))" } ?? "")
        emit(
          .senderRefused(
            refusal, alias: name,
            message: Self.explain(refusal, who: who, takesUnverified: takesUnverified)))
      }
    }
  }

  /// Publishes `advertiser` (already listening); without avahi-daemon, says so (the listener
  /// keeps running, reachable by address) and keeps trying in the background until the
  /// daemon answers or the receiver ends.
  ///
  /// - Throws: ``Failure/advertising(_:)`` when avahi-daemon refuses the service.
  func advertise(_ advertiser: Advertiser) async throws(Failure) {
    do {
      let published = try await advertiser.start()
      announce(advertiser, as: published, discoverable: true)
    } catch .discoveryUnavailable(let reason) {
      emit(.discoveryUnavailable(reason: reason))
      announce(advertiser, as: advertiser.peer.displayName, discoverable: false)
      inBackground { [self] in await advertiseWhenAvailable(advertiser) }
    } catch {
      throw .advertising(error)
    }
  }

  /// Reports `renamed` (if Avahi picked another name) and `advertising`.
  private func announce(_ advertiser: Advertiser, as published: String, discoverable: Bool) {
    let displayName = advertiser.peer.displayName
    if published != displayName { emit(.renamed(from: displayName, to: published)) }
    emit(.advertising(name: published, discoverable: discoverable))
  }

  /// How often a receiver that is not advertised asks for avahi-daemon again.
  static let advertisingRetry: Duration = .seconds(3)

  /// Tries to publish every ``advertisingRetry`` until avahi-daemon answers, the receiver
  /// ends (this task is then cancelled: a stopped advertiser is never started again), or the
  /// daemon refuses the service.
  private func advertiseWhenAvailable(_ advertiser: Advertiser) async {
    while !Task.isCancelled {
      try? await Task.sleep(for: Self.advertisingRetry)
      guard !Task.isCancelled, !isEnding else { return }
      do {
        let published = try await advertiser.start()
        announce(advertiser, as: published, discoverable: true)
        emit(.advertisedLate(name: published))
        return
      } catch .discoveryUnavailable {
        continue
      } catch {
        // Refused by the daemon: that also reaches follow(_:) as `.failed`, which reports it.
        return
      }
    }
  }

  /// Whether the receiver is ending or ended.
  var isEnding: Bool {
    phase.withLock {
      switch $0 {
      case .ready, .running: return false
      case .ending, .ended: return true
      }
    }
  }

  /// Reports later renames and avahi-daemon restarts (the first registration's rename is
  /// reported by ``advertise(_:)``).
  private func follow(_ advertiser: Advertiser) async {
    var initialRegistration = true
    for await event in advertiser.events {
      switch event {
      case .published:
        initialRegistration = false
      case .renamed where initialRegistration:
        break
      case .renamed(let from, let to):
        emit(.renamed(from: from, to: to))
      case .daemonDisconnected(let reason):
        emit(.discoveryInterrupted(reason: reason))
      case .failed(let error):
        emit(.discoveryFailed(error))
      }
    }
  }

  /// What a refusal means to the person at this end, and what lets such senders in.
  static func explain(_ refusal: LocalSendRefusal, who: String, takesUnverified: Bool) -> String {
    switch refusal.reason {
    case .noCertificate:
      return "Turned away \(who): it presented no certificate, so nothing proves which device "
        + "it is (LocalSend 1.17 and older, and other apps without certificates, send none). "
        + "To let such senders ask — shown UNVERIFIED, never accepted by a list — run ferry "
        + "receive --localsend --localsend-unverified."
    case .plainHTTP:
      return "Turned away \(who): it speaks plain HTTP (encryption is off in its LocalSend "
        + "settings). Turn encryption on there, or run ferry receive --localsend "
        + "--localsend-http (then nobody is verified, and anyone on the network can read the "
        + "files)."
    case .handshakeFailed:
      return "Turned away \(who): its TLS handshake failed "
        + "(\(printable(refusal.detail)))."
    }
  }
}
