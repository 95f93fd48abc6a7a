/// The OpenAPI document the generated code was made from (docs/api/openapi.yaml, copied by
/// scripts/generate-api), as the daemon serves it at `/v1/openapi.yaml`.
package enum APIDocument {
  /// Its bytes (YAML).
  package static var yaml: [UInt8] { PackageResources.openapi_yaml }
}
