package server

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// epollWatch watches connections through an epoll set of its own, one
// goroutine for them all, blocked in epoll_wait (a thread in a system
// call, no CPU) until a client closes or sends something. Each
// registration is one-shot and carries an id, not the descriptor, so that
// an event of a closed connection never reaches the next one to get its
// descriptor number.
type epollWatch struct {
	once     sync.Once
	epfd     int         // -1: epoll could not be set up; fallback watches
	dead     atomic.Bool // epoll_wait failed: fallback watches from then on
	fallback readWatch

	mu    sync.Mutex
	next  uint32
	gones map[uint32]func()
}

func newConnWatch() connWatch { return &epollWatch{} }

func (e *epollWatch) start() {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		e.epfd = -1
		return
	}
	e.epfd, e.gones = fd, map[uint32]func(){}
	go e.loop()
}

func (e *epollWatch) watch(conn net.Conn, gone func()) func() {
	e.once.Do(e.start)
	sc, ok := conn.(syscall.Conn)
	if e.epfd < 0 || e.dead.Load() || !ok {
		return e.fallback.watch(conn, gone)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return e.fallback.watch(conn, gone)
	}
	e.mu.Lock()
	id := e.next
	for e.gones[id] != nil {
		id++
	}
	e.next = id + 1
	e.gones[id] = gone
	e.mu.Unlock()
	var addErr error
	ctlErr := raw.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(id)}
		addErr = unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if ctlErr != nil || addErr != nil {
		e.forget(id)
		return e.fallback.watch(conn, gone)
	}
	return func() {
		e.forget(id)
		raw.Control(func(fd uintptr) { //nolint:errcheck // a closed conn is no longer in the set
			unix.EpollCtl(e.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) //nolint:errcheck // nor then
		})
	}
}

// forget removes a watch: its event, if one comes, finds nobody.
func (e *epollWatch) forget(id uint32) {
	e.mu.Lock()
	delete(e.gones, id)
	e.mu.Unlock()
}

func (e *epollWatch) loop() {
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(e.epfd, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			// Never seen; the connections already in the set are then seen
			// going only by their waits' timeouts, and new ones are read.
			e.dead.Store(true)
			return
		}
		for _, ev := range events[:n] {
			id := uint32(ev.Fd)
			e.mu.Lock()
			gone := e.gones[id]
			delete(e.gones, id)
			e.mu.Unlock()
			if gone != nil {
				gone()
			}
		}
	}
}
