import Ferry

/// A LocalSend receiver's upload sessions, as a pure value: one session at a time (others are
/// busy), asked about before it is accepted, its files uploaded only from the address that
/// prepared it — with the certificate it proved, if it proved one — and only with their tokens,
/// each once; a cancel only from that address and certificate; PIN attempts counted per
/// address. It is the one record of the session under way, and holds what the session is
/// about (``Subject``: the transfer core's front end for its files, or its text). No I/O, no
/// clock (the time is passed in), no locks: ``LocalSendServer`` holds it under a lock and acts
/// on its verdicts.
struct UploadSessionMachine: Sendable {
  /// One accepted file of the session.
  struct Upload: Sendable, Equatable {
    /// Its index in the offer the transfer core receives.
    let index: Int
    let token: String
    let size: UInt64
    /// Its SHA-256, when the sender gave one.
    let digest: [UInt8]?
    /// Where it stands.
    var stage = Stage.waiting

    enum Stage: Sendable, Equatable {
      case waiting, uploading, done
    }
  }

  /// Where the receiver is.
  enum State: Sendable {
    /// No session: a prepare-upload may start one.
    case idle
    /// A prepare-upload is being asked about (or being checked): others are busy.
    case asking(Asking)
    /// Accepted: its files are uploaded.
    case active(Active)
  }

  /// What a session is about.
  enum Subject: Sendable {
    /// Files: the transfer core's front end for them.
    case files(UploadSession)
    /// A text message, asked about (it has no upload session).
    case text(LocalSendText)
  }

  struct Asking: Sendable {
    let id: String
    let address: String
    /// The key its sender's certificate proved (nil: none, an unverified or web sender).
    let owner: Fingerprint?
    /// What it is about, once its prepare-upload is read (nil until then).
    var subject: Subject?
  }

  struct Active: Sendable {
    let id: String
    let address: String
    /// The key its sender's certificate proved (nil: none).
    let owner: Fingerprint?
    /// The core's front end for its files (nil only where no core takes them: tests).
    let session: UploadSession?
    /// By file id: only the files accepted.
    var uploads: [String: Upload]
    /// How many of them are ``Upload/Stage/uploading``.
    var uploading = 0
  }

  /// What a prepare-upload gets.
  enum Preparation: Sendable, Equatable {
    /// Start session `id` and ask about it.
    case start(id: String)
    /// Another session is under way (409).
    case busy
    /// The PIN is missing or wrong (401).
    case pinRequired
    /// Too many wrong PINs from this address (429).
    case tooManyAttempts
  }

  /// What an upload request gets.
  enum Admission: Sendable, Equatable {
    /// Take the body as file `index` of the offer.
    case upload(Upload)
    /// Not from the address that prepared the session, or a wrong token (403).
    case forbidden
    /// No such session or file (404 for an unknown file, 409 for a session that is not this
    /// one).
    case unknownSession
    /// Uploaded already, or being uploaded (409).
    case alreadyUploaded
    /// More uploads of the session at once than the core takes (429: try it again later).
    case tooMany
  }

  /// The most wrong PINs from one address before it gets 429.
  static let pinAttempts = 3
  /// The most addresses whose wrong PINs are remembered (the oldest is forgotten first).
  static let rememberedAddresses = 1024
  /// The most wrong PINs from everyone together within ``pinWindow`` before every sender gets
  /// 429 until the window ends: many addresses (an IPv6 network has plenty) must not add up to
  /// enough guesses for a short PIN, and nobody can lock the receiver for longer than that.
  static let totalPinAttempts = 30
  /// The window of ``totalPinAttempts``.
  static let pinWindow: Duration = .seconds(600)

  private(set) var state = State.idle
  /// Wrong PINs per address, in the order first seen.
  private(set) var wrongPins: [(address: String, count: Int)] = []
  /// Wrong PINs from everyone in the current window, and when it began.
  private(set) var wrongPinsTotal = 0
  private var windowStart: ContinuousClock.Instant?
  let pin: String?

  init(pin: String?) {
    self.pin = pin
  }

  /// What a prepare-upload from `address` with `pin` (the query's) would get, without
  /// counting anything: checked before its body is read.
  func check(from address: String, pin given: String?, now: ContinuousClock.Instant)
    -> Preparation
  {
    if let pin {
      if wrongPins.first(where: { $0.address == address })?.count ?? 0 >= Self.pinAttempts
        || (wrongPinsTotal >= Self.totalPinAttempts && !windowEnded(at: now))
      {
        return .tooManyAttempts
      }
      guard given == pin else { return .pinRequired }
    }
    guard case .idle = state else { return .busy }
    return .start(id: "")
  }

  /// Screens a prepare-upload from `address` with `pin` before its body is read: a wrong PIN
  /// is counted here; `.start` says the body may be read (the session starts in ``prepare``).
  mutating func screen(
    from address: String, pin given: String?, now: ContinuousClock.Instant = .now
  ) -> Preparation {
    if windowEnded(at: now) {
      windowStart = nil
      wrongPinsTotal = 0
    }
    let verdict = check(from: address, pin: given, now: now)
    // A missing PIN asks for one; only a wrong one counts as an attempt.
    if verdict == .pinRequired, given != nil { countWrongPin(from: address, now: now) }
    return verdict
  }

  /// A prepare-upload from `address`, with `pin` (the query's) and the certificate `owner`
  /// (nil: none), would start session `id`.
  mutating func prepare(
    from address: String, pin given: String?, id: String, owner: Fingerprint? = nil,
    now: ContinuousClock.Instant = .now
  ) -> Preparation {
    switch screen(from: address, pin: given, now: now) {
    case .start:
      state = .asking(Asking(id: id, address: address, owner: owner))
      return .start(id: id)
    case let refusal:
      return refusal
    }
  }

  private func windowEnded(at now: ContinuousClock.Instant) -> Bool {
    guard let windowStart else { return true }
    return now - windowStart >= Self.pinWindow
  }

  /// Session `id` was accepted with these files (by file id); nothing happens when it is no
  /// longer the one asked about.
  mutating func accepted(_ id: String, uploads: [String: Upload]) -> Bool {
    guard case .asking(let asking) = state, asking.id == id else { return false }
    var session: UploadSession?
    if case .files(let files)? = asking.subject { session = files }
    state = .active(
      Active(
        id: id, address: asking.address, owner: asking.owner, session: session,
        uploads: uploads))
    return true
  }

  /// Session `id`, being asked about, is about `subject`; false when it is no longer the one
  /// (it ended meanwhile).
  mutating func attach(_ subject: Subject, to id: String) -> Bool {
    guard case .asking(var asking) = state, asking.id == id else { return false }
    asking.subject = subject
    state = .asking(asking)
    return true
  }

  /// What session `id` is about, if it is the one under way.
  func subject(of id: String) -> Subject? {
    switch state {
    case .asking(let asking) where asking.id == id: return asking.subject
    case .active(let active) where active.id == id: return active.session.map { .files($0) }
    default: return nil
    }
  }

  /// An upload of file `fileId` with `token`, from `address` with `certificate` (nil: none), to
  /// session `sessionId`.
  mutating func admit(
    _ fileId: String, token: String, session sessionId: String, from address: String,
    certificate: Fingerprint? = nil
  ) -> Admission {
    modifyingActive(sessionId) { active -> Admission in
      guard active.address == address, active.owner == certificate,
        var upload = active.uploads[fileId], upload.token == token
      else { return .forbidden }
      guard upload.stage == .waiting else { return .alreadyUploaded }
      guard active.uploading < LocalSendServer.Limits.parallelUploads else { return .tooMany }
      upload.stage = .uploading
      active.uploads[fileId] = upload
      active.uploading += 1
      return .upload(upload)
    } ?? .unknownSession
  }

  /// File `fileId`'s upload ended: done, or (`retry`) back to waiting for another try.
  mutating func uploadEnded(_ fileId: String, session sessionId: String, retry: Bool) {
    modifyingActive(sessionId) { active in
      guard var upload = active.uploads[fileId], upload.stage == .uploading else { return }
      upload.stage = retry ? .waiting : .done
      active.uploads[fileId] = upload
      active.uploading -= 1
    }
  }

  /// Runs `body` on the active session `sessionId` in place; nil when it is not the one.
  /// The session is taken out of `state` first, so that its uploads are uniquely referenced:
  /// changing one file's stage then changes it in place rather than copying every file's
  /// entry (a copy per upload made a 1000-file session quadratic).
  private mutating func modifyingActive<Result>(
    _ sessionId: String, _ body: (inout Active) -> Result
  ) -> Result? {
    guard case .active(var active) = state, active.id == sessionId else { return nil }
    state = .idle
    defer { state = .active(active) }
    return body(&active)
  }

  /// Whether `address`, presenting `certificate` (nil: none), may cancel session `sessionId`
  /// (nil: whichever it prepared): only the sender that prepared it — another device at the
  /// same address (behind the same router) cannot end a victim's session.
  func mayCancel(_ sessionId: String?, from address: String, certificate: Fingerprint? = nil)
    -> String?
  {
    switch state {
    case .idle: return nil
    case .asking(let asking):
      guard asking.address == address, asking.owner == certificate,
        sessionId == nil || sessionId == asking.id
      else { return nil }
      return asking.id
    case .active(let active):
      guard active.address == address, active.owner == certificate,
        sessionId == nil || sessionId == active.id
      else { return nil }
      return active.id
    }
  }

  /// Session `id` is over (declined, refused, cancelled or finished): the next may start.
  /// Returns whether it was the one under way (it is ended once), and what it was about.
  @discardableResult
  mutating func ended(_ id: String) -> (ended: Bool, subject: Subject?) {
    let subject = subject(of: id)
    switch state {
    case .asking(let asking) where asking.id == id:
      state = .idle
      return (true, subject)
    case .active(let active) where active.id == id:
      state = .idle
      return (true, subject)
    default:
      return (false, nil)
    }
  }

  /// The session under way, if any.
  var currentSession: String? {
    switch state {
    case .idle: return nil
    case .asking(let asking): return asking.id
    case .active(let active): return active.id
    }
  }

  private mutating func countWrongPin(from address: String, now: ContinuousClock.Instant) {
    if windowStart == nil { windowStart = now }
    wrongPinsTotal += 1
    if let index = wrongPins.firstIndex(where: { $0.address == address }) {
      wrongPins[index].count += 1
      return
    }
    if wrongPins.count >= Self.rememberedAddresses { wrongPins.removeFirst() }
    wrongPins.append((address, 1))
  }
}
