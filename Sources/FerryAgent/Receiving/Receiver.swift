import Ferry
import FerryLocalSend
import Foundation
import ServiceLifecycle
import Synchronization

/// Receives files and texts from Ferry peers, LocalSend apps and browsers under one policy and
/// one consent budget: the front ends it is given (a Ferry session and its advertiser, a
/// LocalSend server, a web page) bring invitations and offers; its ``ReceiveDecider`` decides
/// (by a standing rule, or by asking someone); what was approved is written once, whatever
/// path re-offers, resumes or retries (``Approvals``); what happens is reported, in order, on
/// one stream (``events``).
///
/// ``run()`` runs the front ends until ``stop()`` — or a graceful shutdown: the receiver is a
/// swift-service-lifecycle `Service` — or, for a receiver that ends (``Configuration/once``,
/// a web link's end), until its outcome; then ends them: the events stream finishes last. Any
/// thread; one `run()` per receiver.
public final class Receiver: Service, Sendable {
  /// How a receiver receives.
  public struct Configuration: Sendable {
    /// Where files go and how they are placed (``ReceiveOptions``).
    public var options: ReceiveOptions
    /// How long a Ferry sender whose link was lost may come back for the same batch and be
    /// taken back without asking again (zero: always ask).
    public var resumeGrace: Duration
    /// Whether the receiver ends after the first offer accepted (or asked about), with its
    /// outcome (``ReceiveOutcome``); every other offer is declined.
    public var once: Bool
    /// Whether one file (or one text) is all it takes (`--stdout`): offers of more are
    /// declined.
    public var oneFile: Bool

    /// A configuration.
    public init(
      options: ReceiveOptions, resumeGrace: Duration = .seconds(60), once: Bool = false,
      oneFile: Bool = false
    ) {
      (self.options, self.resumeGrace, self.once, self.oneFile) = (
        options, resumeGrace, once || oneFile, oneFile
      )
    }
  }

  /// A way senders reach the receiver.
  public enum FrontEnd: Sendable {
    /// Ferry peers: `session` (asking about its offers) with `advertiser` listening; the
    /// advertiser is published through avahi-daemon (retried until the daemon answers).
    case ferry(Session, Advertiser)
    /// LocalSend apps: `server` (started), announced by `discovery` when there is one;
    /// `takesUnverified`: senders without a certificate may ask (the refusals' words say so).
    case localSend(LocalSendServer, discovery: LocalSendDiscovery?, takesUnverified: Bool)
    /// Browsers, through the web page's `server` (started); the receiver ends when the link
    /// does (`endsAt`), once the session it accepted has ended — nil: it goes on.
    case web(LocalSendServer, endsAt: ContinuousClock.Instant?)
  }

  /// Why ``run()`` failed.
  public enum Failure: Error, Sendable {
    /// avahi-daemon refused the service (a name it will not take, a failure other than its
    /// absence).
    case advertising(DiscoveryError)
  }

  let configuration: Configuration
  let decider: any ReceiveDecider
  let knownPeers: KnownPeers
  let frontEnds: [FrontEnd]
  let space: DestinationSpace
  let approvals = Approvals()
  let gate: OnceGate?
  let open = OpenQuestions()
  let transfers = TransfersUnderWay()
  let partEnds = PartEndSignal()
  let background = BackgroundTasks()
  let phase = Mutex(Phase.ready)
  private let ended = Latch()
  private let continuation: AsyncStream<ReceiverEvent>.Continuation
  private let ends: AsyncStream<End>.Continuation
  private let endStream: AsyncStream<End>

  /// What the receiver reports, in order; finishes once ``run()`` has ended everything.
  public let events: AsyncStream<ReceiverEvent>

  /// Where a receiver stands.
  enum Phase {
    /// Not run yet.
    case ready
    /// Running its front ends.
    case running
    /// Ending: by an outcome, or stopped.
    case ending(End)
    /// Ended: nothing more is reported.
    case ended
  }

  /// Why a receiver ends.
  enum End: Sendable {
    /// Its outcome is known (``Configuration/once``, a web link's end).
    case outcome(ReceiveOutcome)
    /// ``stop()`` was called.
    case stopped
  }

  /// A receiver for `frontEnds`, deciding with `decider` (a ``ReceivePolicy``, possibly over
  /// someone who is asked), knowing senders' keys from `knownPeers`.
  public init(
    _ configuration: Configuration, decider: any ReceiveDecider, knownPeers: KnownPeers,
    frontEnds: [FrontEnd]
  ) {
    self.configuration = configuration
    self.decider = decider
    self.knownPeers = knownPeers
    self.frontEnds = frontEnds
    space = DestinationSpace(configuration.options.destination)
    gate = configuration.once ? OnceGate() : nil
    (events, continuation) = AsyncStream.makeStream()
    (endStream, ends) = AsyncStream.makeStream()
  }

  /// Whether ``stop()`` was called: a file's failure after it is part of its transfer's end.
  public var isStopping: Bool {
    phase.withLock {
      if case .ending(.stopped) = $0 { return true }
      return false
    }
  }

  /// Runs the front ends until the receiver ends: by ``stop()``, or — with
  /// ``Configuration/once``, or a web page whose link ends it — by its outcome (the last
  /// ``ReceiverEvent/outcome(_:)`` reported). Then ends them: stopped, open questions are
  /// declined and transfers under way cancelled (reported as
  /// ``ReceiverEvent/interrupted(_:)``); ended by its outcome, the last answers leave first.
  ///
  /// - Throws: ``Failure/advertising(_:)`` when avahi-daemon refuses the service (its absence
  ///   is reported, ``ReceiverEvent/discoveryUnavailable(reason:)``, and waited out).
  public func run() async throws(Failure) {
    let starting = phase.withLock { phase -> Bool in
      guard case .ready = phase else { return false }
      phase = .running
      return true
    }
    guard starting else { return }
    // A graceful shutdown (the service group's: SIGTERM, SIGINT) or a cancel is a stop.
    let result = await withGracefulShutdownHandler {
      await withTaskCancellationHandler { () async -> Result<Void, Failure> in
        do throws(Failure) {
          return .success(try await serve())
        } catch {
          return .failure(error)
        }
      } onCancel: {
        self.requestStop()
      }
    } onGracefulShutdown: {
      self.requestStop()
    }
    try result.get()
  }

  /// Runs the front ends until the receiver ends, then ends them.
  private func serve() async throws(Failure) {
    for case .ferry(_, let advertiser) in frontEnds {
      do {
        try await advertise(advertiser)
      } catch {
        end()
        throw error
      }
    }
    await withTaskGroup(of: Void.self) { group in
      for frontEnd in frontEnds { serve(frontEnd, in: &group) }
      var reasons = endStream.makeAsyncIterator()
      // (Not cancelled with the task: a stop comes as a reason, and ends what runs first.)
      let reason = await Task { await reasons.next() }.value ?? .stopped
      switch reason {
      case .outcome: await endWithOutcome()
      case .stopped: await endStopped()
      }
      group.cancelAll()
    }
    end()
  }

  /// Stops the receiver (Ctrl-C, a daemon's shutdown): nothing more is listened to or
  /// advertised; questions still open are declined ("the receiver stopped"), transfers under
  /// way cancelled (what arrived stays staged for a resume). Returns once ``run()`` has
  /// ended everything (at once if it never ran).
  public func stop() async {
    guard requestStop() else {
      continuation.finish()
      return
    }
    await ended.wait()
  }

  /// Asks the receiver to stop (``stop()``) without waiting; false when it never ran (it is
  /// then ended).
  @discardableResult
  private func requestStop() -> Bool {
    let running = phase.withLock { phase -> Bool in
      switch phase {
      case .ready:
        phase = .ended
        return false
      case .running:
        phase = .ending(.stopped)
        return true
      case .ending, .ended:
        return true
      }
    }
    if running { ends.yield(.stopped) }
    return running
  }

  /// Reports `event`.
  func emit(_ event: ReceiverEvent) {
    continuation.yield(event)
  }

  /// The receiver's outcome is known: reported, and the receiver ends (the first outcome
  /// only; none after ``stop()``).
  func finish(_ outcome: ReceiveOutcome) {
    let first = phase.withLock { phase -> Bool in
      guard case .running = phase else { return false }
      phase = .ending(.outcome(outcome))
      return true
    }
    guard first else { return }
    emit(.outcome(outcome))
    ends.yield(.outcome(outcome))
  }

  /// Runs `work` in the background until the receiver ends (a timer, one decision).
  func inBackground(_ work: @escaping @Sendable () async -> Void) {
    background.start(work)
  }

  /// The end of a receiver whose outcome is known: nothing more is taken, and the last
  /// answers leave first — a LocalSend file's 200, a text's 204 (at most 2 s), the last
  /// FILE_ACKs, which the sender reads before it hangs up (at most 5 s).
  private func endWithOutcome() async {
    var sessions: [Session] = []
    for frontEnd in frontEnds {
      switch frontEnd {
      case .ferry(let session, let advertiser):
        advertiser.stop()
        sessions.append(session)
      case .localSend(let server, let discovery, _):
        discovery?.stop()
        server.stop()
        await server.drain(timeout: .seconds(2))
      case .web(let server, _):
        server.stop()
        await server.drain(timeout: .seconds(2))
      }
    }
    for session in sessions {
      await session.waitUntilDisconnected(timeout: .seconds(5))
      await session.closeAndWait(timeout: .seconds(1))
    }
  }

  /// The end of a receiver stopped: nothing more is listened to; senders waiting on a
  /// question hear a decline (and the decline a moment on the wire); transfers under way are
  /// cancelled (each reported) and their connections closed once their senders read the
  /// cancel (at most 5 s).
  private func endStopped() async {
    var sessions: [Session] = []
    for frontEnd in frontEnds {
      switch frontEnd {
      case .ferry(let session, let advertiser):
        advertiser.stop()
        sessions.append(session)
      case .localSend(let server, let discovery, _):
        discovery?.stop()
        server.stop()
      case .web(let server, _):
        server.stop()
      }
    }
    if open.declineAll(reason: "the receiver stopped") > 0 {
      try? await Task.sleep(for: .milliseconds(300))
    }
    for transfer in transfers.cancelAll() { emit(.interrupted(transfer)) }
    for session in sessions { await session.closeAndWait(timeout: .seconds(5)) }
  }

  /// Nothing more happens: background work is cancelled, the streams finish.
  private func end() {
    phase.withLock { $0 = .ended }
    background.cancelAll()
    continuation.finish()
    ends.finish()
    ended.open()
  }
}
