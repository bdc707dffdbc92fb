package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wgdelegate/wgdelegate"
)

// progressDelay is how long a load runs before progress is shown: quick
// loads print nothing.
const progressDelay = time.Second

// progressOut is where and how a command shows progress: a redrawn bar
// when stderr is a terminal; plain lines on any other stderr only with
// --verbose (whose debug logs are there anyway); otherwise nothing, so
// that a script reading stderr sees only the one "wgdelegate: " line of
// an error, however long the load took before it failed.
type progressOut struct {
	w     io.Writer // nil: show nothing
	tty   bool
	delay time.Duration // how long to wait before the first line
}

// newProgressOut chooses how to show progress on stderr.
func newProgressOut(stderr io.Writer, verbose bool) progressOut {
	po := progressOut{tty: isTerminal(stderr), delay: progressDelay}
	if po.tty || verbose {
		po.w = stderr
	}
	return po
}

// progress shows a load's progress once it has taken longer than the
// progressOut's delay: a redrawn bar on a terminal, plain lines (one per
// phase or delegate) otherwise. Updates come from the loading goroutine;
// a ticker redraws the bar meanwhile.
type progress struct {
	w     io.Writer
	tty   bool
	delay time.Duration
	label string
	start time.Time

	mu      sync.Mutex
	last    wgdelegate.Progress
	shown   bool   // anything printed yet
	printed string // the last plain line, to print each state once
	done    chan struct{}
	wg      sync.WaitGroup
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress starts reporting the load of label to po.
func newProgress(po progressOut, label string) *progress {
	p := &progress{w: po.w, tty: po.tty, delay: po.delay, label: label, start: time.Now(), done: make(chan struct{})}
	if p.w == nil {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw(false)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// update is the wgdelegate.WithProgress callback.
func (p *progress) update(pr wgdelegate.Progress) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = pr
	p.draw(false)
}

// finish stops the ticker and ends the bar's line. ok is false when the
// load failed: a bar is then erased so the error stays one line.
func (p *progress) finish(ok bool) {
	if p.w == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown {
		return
	}
	if p.tty {
		if ok {
			p.draw(true)
			fmt.Fprintln(p.w)
		} else {
			fmt.Fprint(p.w, "\r\033[K")
		}
	}
}

// describe is one line of text for the current state.
func (p *progress) describe() string {
	pr := p.last
	s := fmt.Sprintf("loading %s: %v", p.label, pr.Phase)
	if pr.Phase == wgdelegate.PhaseBuild && pr.Delegates > 1 {
		s += fmt.Sprintf(" delegate %d/%d", pr.Delegate+1, pr.Delegates)
	}
	if pr.BytesTotal > 0 {
		s += fmt.Sprintf(", %s of %s weights", mib(pr.BytesDone), mib(pr.BytesTotal))
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// draw prints the state if the load has run past p.delay (or final).
func (p *progress) draw(final bool) {
	elapsed := time.Since(p.start)
	if !final && elapsed < p.delay {
		return
	}
	p.shown = true
	line := p.describe()
	if !p.tty {
		if line != p.printed {
			fmt.Fprintf(p.w, "%s (%.1fs)\n", line, elapsed.Seconds())
			p.printed = line
		}
		return
	}
	const width = 24
	frac := 0.0
	switch {
	case p.last.Phase == wgdelegate.PhaseDone:
		frac = 1
	case p.last.BytesTotal > 0:
		frac = float64(p.last.BytesDone) / float64(p.last.BytesTotal)
	case p.last.Delegates > 0:
		frac = float64(p.last.Delegate) / float64(p.last.Delegates)
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %s (%.1fs)", strings.Repeat("#", n), strings.Repeat(" ", width-n), line, elapsed.Seconds())
}
