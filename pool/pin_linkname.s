//go:build !race && !poolkit_nolinkname

// This file is empty on purpose: it lets pin_linkname.go declare functions
// without a body (their bodies come from the runtime through go:linkname).
