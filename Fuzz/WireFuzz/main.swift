// libFuzzer target for the wire codec (the FerryWire target, Sources/FerryWire), compiled on
// its own with `swiftc -sanitize=fuzzer,address` by scripts/fuzz: the target depends on
// nothing but the standard library.
//
// Properties checked on every input, besides "never crashes, never over-reads":
// - bytes fed in two pieces decode exactly as fed whole;
// - a decoded control or session message re-encodes to the very frame it came from (the encoding is
//   canonical), and decodes back to itself.

/// The libFuzzer entry point: decodes `size` bytes at `data` and checks the properties above.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))

  var whole = FrameDecoder()
  whole.append(bytes)
  let wholeFrames = drain(&whole)

  var pieces = FrameDecoder()
  let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
  pieces.append(bytes[..<split])
  var pieceFrames = drain(&pieces)
  pieces.append(bytes[split...])
  pieceFrames += drain(&pieces)
  precondition(wholeFrames == pieceFrames, "splitting the input changed the frames")

  for frame in wholeFrames {
    if let message = try? ControlMessage(frame: frame) {
      precondition(message.frame == frame, "re-encoding \(message) changed the frame")
      precondition((try? ControlMessage(frame: message.frame)) == message, "round trip failed")
    }
    if let message = try? TransferMessage(frame: frame) {
      precondition(message.frame == frame, "re-encoding \(message) changed the frame")
      precondition((try? TransferMessage(frame: message.frame)) == message, "round trip failed")
    }
    if let message = try? ResourceMessage(frame: frame) {
      precondition(message.frame == frame, "re-encoding \(message) changed the frame")
      precondition((try? ResourceMessage(frame: message.frame)) == message, "round trip failed")
    }
  }
  return 0
}

private func drain(_ decoder: inout FrameDecoder) -> [Frame] {
  var frames: [Frame] = []
  while let frame = try? decoder.next() {
    frames.append(frame)
  }
  return frames
}
