// Package pin reaches the runtime's procPin and procUnpin, which pin the calling
// goroutine to its P (disabling preemption) and return the P's id.
//
// Code that runs between Pin and Unpin is leaf code: no blocking, no locks, no
// channel operations, no calls into user code and no panics (a panic while pinned
// is a fatal runtime error, not a recoverable one).
//
// Under the build tag poolkit_nolinkname the package is empty and callers use
// their own fallback.
package pin
