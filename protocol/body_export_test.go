package protocol

// DecodeBody gives the external fuzz tests the body decoder.
var DecodeBody = decodeBody
