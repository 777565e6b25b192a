//go:build unix && !aix

package manager_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/poolkit/poolkit/manager"
)

// A Dialer against a line-echo server: a connection whose exchange was
// complete is reusable; one with a reply left unread is not. (Unix only:
// elsewhere Recycle cannot see unread data; see Dialer.Recycle.)
func ExampleDialer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan struct{})
	go func() { // the server: answers each line twice from the second on
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for n := 0; ; n++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			reply := line
			if n > 0 {
				reply += line // one write: both copies arrive together
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}()
	defer func() { ln.Close(); <-served }()

	d := manager.Dialer{Network: "tcp", Address: ln.Addr().String()}
	ctx := context.Background()
	conn, err := d.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close(conn)

	exchange := func(msg string) {
		io.WriteString(conn, msg+"\n")
		buf := make([]byte, len(msg)+1)
		io.ReadFull(conn, buf) // reads one copy of the reply
		fmt.Printf("sent %s, got %q\n", msg, buf)
	}

	fmt.Println("new:", d.Recycle(ctx, conn, manager.Metrics{}))
	exchange("one")
	fmt.Println("after one:", d.Recycle(ctx, conn, manager.Metrics{Uses: 1}))
	exchange("two")
	err = d.Recycle(ctx, conn, manager.Metrics{Uses: 2})
	fmt.Println("after two:", err)
	fmt.Println("not reusable:", errors.Is(err, manager.ErrBroken))
	// Output:
	// new: <nil>
	// sent one, got "one\n"
	// after one: <nil>
	// sent two, got "two\n"
	// after two: manager: connection not reusable: unread data pending (the protocol is out of step)
	// not reusable: true
}
