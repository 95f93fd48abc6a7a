// Batch sender: sends files and folders to a receiver at HOST:PORT without discovery, checking
// its fingerprint, and prints one line per file. Suited to scripts and cron jobs.
//
//   swift run ferry-example-batch HOST PORT FINGERPRINT PATH...
import Ferry
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4, let port = UInt16(arguments[1]) else {
  print("usage: ferry-example-batch HOST PORT FINGERPRINT PATH...")
  exit(2)
}
do {
  let identity = try Identity.loadOrCreate()
  let session = try Session(identity: identity, displayName: "batch-sender")
  let expected = try Fingerprint(parsing: arguments[2])
  let peer = try await session.invite(host: arguments[0], port: port, expecting: expected)
  let items = try ResourceItem.expanding(arguments[3...].map { URL(fileURLWithPath: $0) })
  let transfer = try session.sendResources(items, to: peer)
  for result in try await transfer.result() {
    print("\(result.status)\t\(result.path)")
  }
  print("\(transfer.bytesSent) bytes sent (the rest was already at the receiver)")
} catch {
  print("error: \(error)")
  exit(1)
}
