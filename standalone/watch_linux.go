// This file implements file events on Linux: inotify.

package standalone

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// inotifyMask is what a watched directory reports: entries created,
// deleted, renamed in or out, written, closed after writing, or their
// attributes changed, and the directory itself deleted or renamed.
const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// eventBuffer is the size of one read of events: room for hundreds of
// events, whatever their names (each at most 16 bytes and NAME_MAX+1).
const eventBuffer = 64 << 10

// inotify is the events of the directories a load reads. One goroutine
// reads them and signals c (coalescing: c holds at most one value); the
// directories are chosen by Watch.
type inotify struct {
	f    *os.File
	fd   int
	c    chan struct{}
	done chan struct{}

	mu sync.Mutex
	// all says, for each watch, whether any event in it counts: the
	// directories of symlinks' targets, whose names may be anything.
	all map[int32]bool
}

func newEvents() (events, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// Non-blocking, so that the runtime's poller waits for it and Close
	// ends a Read under way.
	w := &inotify{
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd,
		c: make(chan struct{}, 1), done: make(chan struct{}),
		all: map[int32]bool{},
	}
	go w.read()
	return w, nil
}

func (w *inotify) C() <-chan struct{}    { return w.c }
func (w *inotify) Done() <-chan struct{} { return w.done }

// Close stops the events and waits for the reading goroutine to end.
func (w *inotify) Close() {
	w.f.Close()
	<-w.done
}

// Watch watches the directories a load of paths reads, and stops
// watching the rest. It reports whether every one is watched: one may
// have gone, or the user's inotify watches run out (fs.inotify.max_user_watches).
func (w *inotify) Watch(paths []string) (bool, error) {
	dirs, targets := watchDirs(paths)
	w.mu.Lock()
	defer w.mu.Unlock()
	all := make(map[int32]bool, len(w.all))
	var firstErr error
	add := func(dir string, any bool) {
		wd, err := unix.InotifyAddWatch(w.fd, dir, inotifyMask)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("watching %s: %w", dir, err)
			}
			return
		}
		all[int32(wd)] = all[int32(wd)] || any
	}
	for _, d := range dirs {
		add(d, false)
	}
	for _, d := range targets {
		add(d, true)
	}
	for wd := range w.all {
		if _, keep := all[wd]; !keep {
			unix.InotifyRmWatch(w.fd, uint32(wd)) // fails if the directory went: fine
		}
	}
	w.all = all
	return firstErr == nil, firstErr
}

// read reads events until the file is closed, and signals c after any
// that may change what a load reads.
func (w *inotify) read() {
	defer close(w.done)
	buf := make([]byte, eventBuffer)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed; or broken, which Done tells the watcher
		}
		if w.relevant(buf[:n]) {
			select {
			case w.c <- struct{}{}:
			default: // a signal is pending already
			}
		}
	}
}

// relevant parses a read's events and reports whether any may change
// what a load reads: an overflow of the queue (events lost), an event
// of a directory itself, of a subdirectory, of a manifest, of a name
// starting with ".." (a ConfigMap volume's "..data" link, swapped to
// update every file at once), or of anything in a symlink target's
// directory. Others (an editor's swap and backup files) are not.
func (w *inotify) relevant(buf []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	found := false
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		n := int(binary.NativeEndian.Uint32(buf[12:]))
		if len(buf) < unix.SizeofInotifyEvent+n {
			break
		}
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+n]), "\x00")
		buf = buf[unix.SizeofInotifyEvent+n:]
		switch {
		case mask&unix.IN_IGNORED != 0:
			// The directory is gone (or unwatched): the reload after this
			// signal watches what is there now.
			delete(w.all, wd)
			found = true
		case mask&unix.IN_Q_OVERFLOW != 0, name == "", mask&unix.IN_ISDIR != 0,
			isManifest(name), strings.HasPrefix(name, ".."), w.all[wd]:
			found = true
		}
	}
	return found
}
