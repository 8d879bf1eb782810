package server

import "net"

// A connWatch tells a taken-over wait (heldConn) that its client went away:
// closed the connection, or sent anything on it (it has no further
// request to make there). On Linux one goroutine watches every such
// connection through an epoll set of its own (connwatch_linux.go), so
// that a held wait needs no goroutine; elsewhere, and for a connection
// that is not a plain socket, a goroutine per connection reads it.
type connWatch interface {
	// watch calls gone, at most once, from another goroutine, when the
	// client of conn goes away. stop ends the watch; call it before
	// closing conn. gone may still come after stop (it then does nothing
	// harmful: the wait is over).
	watch(conn net.Conn, gone func()) (stop func())
}

// readWatch watches a connection by a goroutine blocked reading it.
type readWatch struct{}

func (readWatch) watch(conn net.Conn, gone func()) func() {
	go func() {
		var b [1]byte
		conn.Read(b[:]) //nolint:errcheck // any outcome means the client is done with the wait
		gone()
	}()
	return func() {} // closing conn ends the read
}
