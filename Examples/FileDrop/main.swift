// File drop with a progress bar.
//
//   swift run ferry-example-filedrop receive ~/Downloads   # accept files into a folder
//   swift run ferry-example-filedrop send NAME FILE...     # send files to the receiver NAME
import Ferry
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let identity = Identity.generate()
let name = arguments.first == "receive" ? "drop box" : "filedrop-\(getpid())"
// One identity and one name: the advertiser is made from the session.
let session = try Session(identity: identity, displayName: name)
let type = try ServiceType("ferry-drop")

func bar(_ snapshot: ProgressSnapshot) -> String {
  let fraction = snapshot.total > 0 ? Double(snapshot.bytes) / Double(snapshot.total) : 1
  let filled = Int(fraction * 30)
  let rate = snapshot.bytesPerSecond / 1_000_000
  return "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: 30 - filled))] "
    + "\(Int(fraction * 100))% \(String(format: "%.1f", rate)) MB/s \(snapshot.currentFile ?? "")"
}

switch arguments.first {
case "receive" where arguments.count == 2:
  session.receiveResources(ReceiveOptions(destination: URL(fileURLWithPath: arguments[1])))
  let advertiser = try Advertiser(session: session, serviceType: type)
  print("receiving as \(try await advertiser.start()) into \(arguments[1])")
  Task {
    for await invitation in advertiser.invitations { try? await invitation.accept(into: session) }
  }
  for await event in session.resourceEvents {
    switch event {
    case .offerReceived(let transfer):
      Task { for await snapshot in transfer.progress.snapshots { print(bar(snapshot)) } }
    case .finished(let name, _, .success(let url), _):
      print("saved \(name) → \(url?.path ?? "(skipped)")")
    case .finished(let name, _, .failure(let error), _):
      print("\(name) failed: \(error)")
    default:
      break
    }
  }
case "send" where arguments.count >= 3:
  let browser = try Browser(serviceType: type)
  let found = try await browser.firstPeer { $0.name == arguments[1] }
  let peer = try await browser.invite(found, to: session)
  let items = try ResourceItem.expanding(arguments[2...].map { URL(fileURLWithPath: $0) })
  let transfer = try session.sendResources(items, to: peer)
  let printer = Task { for await snapshot in transfer.progress.snapshots { print(bar(snapshot)) } }
  let results = try await transfer.result()
  await printer.value
  print("sent \(results.count) file(s)")
default:
  print("usage: ferry-example-filedrop receive DIR | send NAME FILE...")
  exit(2)
}
