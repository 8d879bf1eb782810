package db

import (
	"context"
	"database/sql"
	"sync"

	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// stmtCache holds prepared statements for the SQLite queries of
// ask_person, the busiest write: parsing and planning AskCheck's
// three-table join on every call cost as much CPU as the question's two
// writes together, all of it inside the write lock. A search of the word
// lists runs its statements prepared too (search_lists.go): FTS5 queries
// cost 60 µs to prepare. database/sql keeps a
// prepared statement per connection and re-prepares it on a new one.
type stmtCache struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt // a nil value: being prepared
	closed bool
}

// stmt returns query's prepared statement, or nil until it is ready.
//
// Preparing needs a connection of its own, and the caller is inside a write
// transaction while the pool's other connections may all be waiting for
// the write lock: preparing there could wait for a connection that is
// never freed. So the first calls run unprepared while a goroutine
// prepares the statement.
func (c *stmtCache) stmt(db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stmts[query]
	if !ok && !c.closed {
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		c.stmts[query] = nil
		go c.prepare(db, query)
	}
	return st
}

func (c *stmtCache) prepare(db *sql.DB, query string) {
	st, err := db.Prepare(query)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		delete(c.stmts, query) // a later call tries again
	case c.closed:
		st.Close()
	default:
		c.stmts[query] = st
	}
}

// close releases the statements; later calls run unprepared.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, st := range c.stmts {
		if st != nil {
			st.Close()
		}
	}
	c.stmts = nil
}

// preparedTx runs a transaction's queries through the cache's statements
// once they are ready, and as plain queries until then.
type preparedTx struct {
	tx    *sql.Tx
	store *sqliteStore
}

var _ sqlitedb.DBTX = preparedTx{}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.store.stmts.stmt(p.store.db, query); st != nil {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func (p preparedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.tx.PrepareContext(ctx, query)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.store.stmts.stmt(p.store.db, query); st != nil {
		return p.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.store.stmts.stmt(p.store.db, query); st != nil {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

// writeLock is a mutex that a waiter can give up on when its context ends.
type writeLock struct {
	once sync.Once
	ch   chan struct{}
}

func (w *writeLock) lock(ctx context.Context) error {
	w.once.Do(func() { w.ch = make(chan struct{}, 1) })
	select {
	case w.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *writeLock) unlock() { <-w.ch }
