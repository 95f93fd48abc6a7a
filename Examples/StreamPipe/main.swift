// A byte stream between two machines: like `nc`, over Ferry's TLS with backpressure.
//
//   swift run ferry-example-stream listen pipe > received.bin
//   cat file.bin | swift run ferry-example-stream send pipe
import Ferry
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 else {
  FileHandle.standardError.write(Data("usage: ferry-example-stream listen|send NAME\n".utf8))
  exit(2)
}
let identity = Identity.generate()
let session = try Session(
  identity: identity, displayName: arguments[0] == "listen" ? arguments[1] : "stream-\(getpid())")
let type = try ServiceType("ferry-pipe")

if arguments[0] == "listen" {
  let advertiser = try Advertiser(session: session, serviceType: type)
  _ = try await advertiser.start()
  Task {
    for await invitation in advertiser.invitations { try? await invitation.accept(into: session) }
  }
  for await stream in session.incomingStreams {
    for try await chunk in stream.chunks {
      FileHandle.standardOutput.write(Data(chunk))
    }
    break
  }
} else {
  let browser = try Browser(serviceType: type)
  let found = try await browser.firstPeer { $0.name == arguments[1] }
  let peer = try await browser.invite(found, to: session)
  let writer = try await session.startStream(named: "stdin", to: peer)
  while case let data = FileHandle.standardInput.availableData, !data.isEmpty {
    try await writer.write(Array(data))  // waits while the reader is behind
  }
  try await writer.finish()
}
