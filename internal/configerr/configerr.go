// Package configerr is the error that pool.New and bytepool.New return for a
// bad Config: one pattern for both packages.
package configerr

import "fmt"

// Error is a bad Config. Its message starts with the package's name and names
// the bad field ("pool: Config.MaxSize must be >= 1, got 0"); it matches its
// package's ErrInvalidConfig with errors.Is, by unwrapping to it.
type Error struct {
	msg  string
	kind error
}

// New returns an Error that matches kind, with the message
// fmt.Sprintf(format, args...).
func New(kind error, format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...), kind: kind}
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the package's ErrInvalidConfig.
func (e *Error) Unwrap() error { return e.kind }
