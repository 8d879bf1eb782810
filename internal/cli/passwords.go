package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// passwords reads passwords: without echo from a terminal, or one per line
// from standard input when it is not a terminal (or with --password-stdin).
// A password never enters argv, output or an error.
type passwords struct {
	io    *IO
	tty   int // the terminal's descriptor, or -1
	lines *bufio.Reader
}

func newPasswords(io *IO, fromStdin bool) *passwords {
	p := &passwords{io: io, tty: -1}
	if f, ok := io.Stdin.(*os.File); ok && !fromStdin && term.IsTerminal(int(f.Fd())) {
		p.tty = int(f.Fd())
	}
	return p
}

// read asks for a password with prompt on a terminal, or reads the next line.
func (p *passwords) read(prompt, what string) (string, error) {
	if p.tty >= 0 {
		fmt.Fprint(p.io.Stderr, prompt)
		b, err := term.ReadPassword(p.tty)
		fmt.Fprintln(p.io.Stderr)
		if err != nil {
			return "", fmt.Errorf("read the %s: %w", what, err)
		}
		return string(b), nil
	}
	if p.lines == nil {
		p.lines = bufio.NewReader(p.io.Stdin)
	}
	line, err := p.lines.ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		return "", fmt.Errorf("no %s on standard input (one password per line)", what)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// readNew reads a password being set: twice on a terminal, so a typo does
// not lock anyone out.
func (p *passwords) readNew(prompt, what string) (string, error) {
	pw, err := p.read(prompt, what)
	if err != nil || p.tty < 0 {
		return pw, err
	}
	again, err := p.read("Again: ", what)
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", fmt.Errorf("the two entries of the %s differ: nothing was changed", what)
	}
	return pw, nil
}
