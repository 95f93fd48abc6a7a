import Ferry
import Synchronization

/// LocalSend across subnets: where its multicast does not reach, devices at addresses given
/// by the user are asked by `POST /register`, as LocalSend's own fallback asks its /24.
extension LocalSendDiscovery {
  /// How often one address is asked by a scan, however often it is scanned.
  public static let scanInterval: Duration = .seconds(60)
  /// Scan requests under way at once.
  static let concurrentScans = 32
  /// How long a scanned address has to answer, connection and TLS handshake included (an
  /// address that takes longer is left behind, its connection ending by its own timeouts).
  static let scanAnswerTimeout: Duration = .seconds(3)

  /// Asks each of `addresses` (IP literals) at LocalSend's port by `POST /register` over HTTPS
  /// — any certificate, recorded — ``concurrentScans`` at a time, each address at most once
  /// per ``scanInterval``. A device that answers is a sighting (`via` ``LocalSendSighting/Via/scan``),
  /// proven when its certificate is the key it answers with. Returns when every address due
  /// was asked (or the task is cancelled). Any task.
  public func scan(_ addresses: [String]) async {
    let now = ContinuousClock.now
    let due = scanned.withLock { scanned -> [String] in
      scanned = scanned.filter { now - $0.value < Self.scanInterval }
      var due: [String] = []
      for address in addresses where scanned[address] == nil {
        scanned[address] = now
        due.append(address)
      }
      return due
    }
    await withTaskGroup(of: Void.self) { group in
      var next = due.makeIterator()
      for _ in 0..<Self.concurrentScans {
        guard let address = next.next() else { break }
        group.addTask { await self.askWithin(address) }
      }
      while await group.next() != nil {
        guard !Task.isCancelled, let address = next.next() else { continue }
        group.addTask { await self.askWithin(address) }
      }
    }
  }

  /// ``ask(_:)``, waited for ``scanAnswerTimeout`` at most: a silent or stalling address
  /// costs the scan no more (its request goes on alone, and ends by its own timeouts).
  private func askWithin(_ address: String) async {
    let (ended, end) = AsyncStream.makeStream(of: Void.self)
    Task {
      await self.ask(address)
      end.finish()
    }
    Task {
      try? await Task.sleep(for: Self.scanAnswerTimeout)
      end.finish()
    }
    for await _ in ended {}
  }

  /// One scan request: a sighting if a LocalSend device answers at `address`.
  private func ask(_ address: String) async {
    guard
      let answer = try? await client.request(
        .POST, host: address, port: Int(LocalSendProtocol.defaultPort),
        path: LocalSendProtocol.Path.register, body: .json(LocalSendJSON.encode(me().answer)),
        expecting: nil, answerTimeout: Self.scanAnswerTimeout),
      answer.status.code == 200,
      let device = try? LocalSendJSON.decode(LocalSendDevice.self, from: answer.body).validated(),
      device.usesTLS,
      // This machine's own server, in a range that holds it.
      device.fingerprint.uppercased() != me().fingerprint.uppercased()
    else { return }
    let proven =
      answer.certificate.map { $0.hexString == device.fingerprint.uppercased() } ?? false
    continuation.yield(
      LocalSendSighting(device: device, address: address, via: .scan, proven: proven))
  }
}
