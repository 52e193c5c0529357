package lineedit

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// History is a bounded list of entered lines, oldest first.
type History struct {
	max   int
	lines []string
}

// NewHistory returns an empty history keeping at most limit lines (at
// least 1).
func NewHistory(limit int) *History { return &History{max: max(limit, 1)} }

// Len is the number of lines kept.
func (h *History) Len() int { return len(h.lines) }

// At returns line i, 0 being the oldest.
func (h *History) At(i int) string { return h.lines[i] }

// Add appends line unless it is blank or repeats the last line; the
// oldest lines are dropped beyond the bound.
func (h *History) Add(line string) {
	if strings.TrimSpace(line) == "" || strings.ContainsAny(line, "\r\n") {
		return
	}
	if n := len(h.lines); n > 0 && h.lines[n-1] == line {
		return
	}
	h.lines = append(h.lines, line)
	if over := len(h.lines) - h.max; over > 0 {
		h.lines = append(h.lines[:0], h.lines[over:]...)
	}
}

// Read adds the lines of r (one entry per line).
func (h *History) Read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		h.Add(sc.Text())
	}
	return sc.Err()
}

// Write writes the lines to w, one per line.
func (h *History) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, l := range h.lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Load reads the history file name; a missing file is no error.
func (h *History) Load(name string) error {
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return h.Read(f)
}

// Save replaces the history file name (mode 0600: commands may name
// private paths) with the lines kept, through a temporary file.
func (h *History) Save(name string) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".history-*")
	if err != nil {
		return err
	}
	err = h.Write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
