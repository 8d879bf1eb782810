package server

import (
	"net"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection: the server's
// (watched) and the client's.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestConnWatch: the watch of a taken-over connection (epoll on Linux, and
// the reading goroutine used elsewhere) calls gone once when the client
// closes or sends something, never while it stays quiet, and not after stop.
func TestConnWatch(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]connWatch{"platform": newConnWatch(), "read": readWatch{}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			watch := func() (net.Conn, net.Conn, chan struct{}, func()) {
				s, c := pair(t)
				gone := make(chan struct{}, 2)
				stop := w.watch(s, func() { gone <- struct{}{} })
				return s, c, gone, stop
			}
			once := func(what string, gone chan struct{}) {
				t.Helper()
				select {
				case <-gone:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: gone was not called within 10 s", what)
				}
				select {
				case <-gone:
					t.Errorf("%s: gone was called twice", what)
				case <-time.After(50 * time.Millisecond):
				}
			}

			_, _, gone, _ := watch() // a client that stays quiet
			_, closes, goneClose, _ := watch()
			_, sends, goneSend, _ := watch()
			_, stopped, goneStopped, stop := watch()
			closes.Close()
			once("the client closed", goneClose)
			sends.Write([]byte("GET / HTTP/1.1\r\n")) //nolint:errcheck // a write on loopback
			once("the client sent something", goneSend)
			select {
			case <-gone:
				t.Error("gone was called for a quiet client")
			case <-time.After(200 * time.Millisecond):
			}
			if name == "platform" { // the reading goroutine cannot be stopped but by closing
				stop()
				stopped.Close()
				select {
				case <-goneStopped:
					t.Error("gone was called after stop")
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
}
