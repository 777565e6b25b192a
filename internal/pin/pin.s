// This file is empty on purpose: it lets pin.go declare functions without a body
// (their bodies come from the runtime through go:linkname).
