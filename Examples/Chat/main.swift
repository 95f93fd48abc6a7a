// Chat over data messages.
//
//   swift run ferry-example-chat host alice       # advertise and wait for someone to join
//   swift run ferry-example-chat join bob alice   # find 'alice' and join her session
//
// Lines typed are sent to every connected peer; lines received are printed with their sender.
import Ferry
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, ["host", "join"].contains(arguments[0]) else {
  print("usage: ferry-example-chat host NAME | join NAME HOSTNAME")
  exit(2)
}
let name = arguments[1]
let identity = Identity.generate()
let session = try Session(identity: identity, displayName: name)

if arguments[0] == "host" {
  let advertiser = try Advertiser(session: session, serviceType: try ServiceType("ferry-chat"))
  print("hosting as \(try await advertiser.start()); waiting for people to join")
  Task {
    for await invitation in advertiser.invitations {
      print("\(invitation.peer) joins (verification code \(invitation.verificationCode))")
      try? await invitation.accept(into: session)
    }
  }
} else {
  let host = arguments.count > 2 ? arguments[2] : "alice"
  let browser = try Browser(serviceType: try ServiceType("ferry-chat"))
  let found = try await browser.firstPeer { $0.name == host }
  // The code is known once the host is asked, before it answers: compare it with the host's.
  let peer = try await browser.invite(found, to: session) { host, code in
    print("asking \(host) to let us join (verification code \(code))")
  }
  print("joined \(peer)")
}

Task {
  for try await message in session.messages {
    print("\(message.peer.displayName): \(String(decoding: message.data, as: UTF8.self))")
  }
}
while let line = readLine() {
  try await session.send(Array(line.utf8), to: session.connectedPeers)
}
