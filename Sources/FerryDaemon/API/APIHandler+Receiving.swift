import FerryAPI
import Foundation

extension APIHandler {
  package func setAccept(_ input: Operations.setAccept.Input) async throws
    -> Operations.setAccept.Output
  {
    guard let accept = parts.accept else {
      throw APIProblem(503, "unavailable", "this daemon's policy cannot be switched")
    }
    guard case .json(let request) = input.body,
      let mode = AcceptSwitch.Mode(rawValue: request.accept.rawValue), accept.set(mode)
    else {
      throw APIProblem.badRequest("accept is ask, trusted or trusted-only")
    }
    return .ok(.init(body: .json(.init(accept: request.accept))))
  }

  package func listTransfers(_ input: Operations.listTransfers.Input) async throws
    -> Operations.listTransfers.Output
  {
    .ok(.init(body: .json(.init(transfers: parts.transfers?.list ?? []))))
  }

  package func cancelTransfer(_ input: Operations.cancelTransfer.Input) async throws
    -> Operations.cancelTransfer.Output
  {
    guard let cancelled = parts.transfers?.cancel(input.path.id) else {
      throw APIProblem.notFound("no transfer \(input.path.id) is coming in")
    }
    return .ok(.init(body: .json(cancelled)))
  }

  package func openFolder(_ input: Operations.openFolder.Input) async throws
    -> Operations.openFolder.Output
  {
    guard let folder = parts.receiveFolder else {
      throw APIProblem(503, "unavailable", "this daemon does not receive into a folder")
    }
    guard await DesktopOpener.open(folder) else {
      throw APIProblem(
        409, "no-desktop",
        "the daemon has no desktop to open \(folder) in (it was started without DISPLAY or "
          + "WAYLAND_DISPLAY, or xdg-open failed)")
    }
    return .ok(.init(body: .json(.init(dir: folder))))
  }
}
