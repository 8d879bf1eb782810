//go:build !linux

package server

func newConnWatch() connWatch { return readWatch{} }
