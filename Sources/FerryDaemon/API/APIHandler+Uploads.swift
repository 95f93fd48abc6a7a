import FerryAPI
import OpenAPIRuntime

extension APIHandler {
  package func createUpload(_ input: Operations.createUpload.Input) async throws
    -> Operations.createUpload.Output
  {
    guard case .json(let request) = input.body else {
      throw APIProblem.badRequest("the body is a JSON UploadRequest")
    }
    let entry = try await uploads().start(request)
    return .created(.init(body: .json(entry.api(withFiles: true))))
  }

  package func uploadFile(_ input: Operations.uploadFile.Input) async throws
    -> Operations.uploadFile.Output
  {
    guard case .binary(let body) = input.body else {
      throw APIProblem.badRequest("a file's bytes are application/octet-stream")
    }
    try await uploads().write(input.path.id, index: input.path.index, body: body)
    return .noContent(.init())
  }

  private func uploads() throws(APIProblem) -> BrowserUploads {
    guard let uploads = parts.uploads else {
      throw APIProblem(503, "unavailable", "this daemon takes no uploads")
    }
    return uploads
  }
}
