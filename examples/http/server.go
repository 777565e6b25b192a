package main

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"unicode"

	"github.com/poolkit/poolkit/bytepool"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// server handles the example's routes. Every request body is read into a
// bytepool.Buffer and every response is built in one; both go back to the
// pool when the handler returns.
type server struct {
	bp *bytepool.Pool
}

// newHandler returns the example's handler; its buffers come from bp.
//
//	POST /upper  → the body in upper case
//	POST /count  → "lines=L words=W bytes=B\n" for the body
//
// Bodies are limited to 1 MiB (413 beyond); other methods get 405.
func newHandler(bp *bytepool.Pool) http.Handler {
	s := &server{bp: bp}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /upper", s.upper)
	mux.HandleFunc("POST /count", s.count)
	return mux
}

// readBody reads r's body into a pooled buffer; the caller frees it. On
// failure it has answered the request and returns nil.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) *bytepool.Buffer {
	// Room for the announced length: ReadFrom fills it and grows no
	// further when the body is that long.
	size := 0
	if r.ContentLength > 0 && r.ContentLength <= maxBody {
		size = int(r.ContentLength)
	}
	in := s.bp.NewBuffer(size)
	if _, err := in.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
		in.Free()
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body larger than "+strconv.Itoa(maxBody)+" bytes", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		}
		return nil
	}
	return in
}

// reply writes out as a text/plain response with its length.
func reply(w http.ResponseWriter, out *bytepool.Buffer) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(http.StatusOK)
	out.WriteTo(w) // an error means the client went away: nothing to do
}

func (s *server) upper(w http.ResponseWriter, r *http.Request) {
	in := s.readBody(w, r)
	if in == nil {
		return
	}
	defer in.Free()
	out := s.bp.NewBuffer(in.Len())
	defer out.Free()
	for _, c := range bytes.Runes(in.Bytes()) {
		out.WriteRune(unicode.ToUpper(c))
	}
	reply(w, out)
}

func (s *server) count(w http.ResponseWriter, r *http.Request) {
	in := s.readBody(w, r)
	if in == nil {
		return
	}
	defer in.Free()
	b := in.Bytes()
	out := s.bp.NewBuffer(64)
	defer out.Free()
	out.WriteString("lines=")
	out.WriteString(strconv.Itoa(bytes.Count(b, []byte{'\n'})))
	out.WriteString(" words=")
	out.WriteString(strconv.Itoa(len(bytes.Fields(b))))
	out.WriteString(" bytes=")
	out.WriteString(strconv.Itoa(len(b)))
	out.WriteByte('\n')
	reply(w, out)
}
