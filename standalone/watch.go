// This file implements noticing changed files: file events, and polling.

package standalone

// Standalone mode sees a change as it happens, from file events: on
// Linux, inotify watches every directory a load reads (the directories
// given and their subdirectories, the directory of each file given, and
// the directory a symlinked file points into). Watching directories
// rather than files sees every way a file changes: written in place,
// replaced by a rename (editors, kubectl-style atomic writes), created,
// deleted, or swapped along with every other file of a Kubernetes
// ConfigMap volume, whose "..data" link is renamed over. Events come in
// bursts (an editor writes a temporary file, then renames it), so the
// first event of a burst starts a debounce: the reload starts once no
// event came for debounceQuiet, or debounceMax after the first event
// when they keep coming. Every reload watches again what the load reads
// (a new subdirectory, a directory replaced) before reading it, so a
// write made while it reads is an event for the next reload.
//
// Polling stays, as a fallback: every Options.Poll (1 s) where there are
// no events (not Linux; inotify's limits reached, fs.inotify.max_user_
// instances or max_user_watches, which the log says), and every
// safetyPoll even with events, for the changes events miss (a network
// filesystem changed by another machine, a symlink's target edited in
// a directory not watched). A poll costs a stat of each file (5,000
// routes in 50 files: 50 stats, well under a millisecond), and a read
// only of files written in the last racyWindow, so safetyPoll could be
// short; 10 s keeps the log of a missed change readable and its cost
// out of sight. After a reload for events the next poll only stamps the
// files (the reload read them), so a change events miss is seen within
// two safetyPolls.
//
// A poll lists the files a load reads (filesIn) and stats them. A file is
// changed when it appears, disappears, or its size or modification time
// differs from the last poll.
//
// Size and time alone miss one edit: one that keeps the size and lands in
// the same timestamp tick as the write before it. Filesystems stamp files
// from a coarse clock (a scheduler tick on Linux, up to 2 s on others), so
// "two" replaced by "one" within a tick looks unchanged. Git's index has the
// same problem and calls such entries racy. The answer is the same: a file
// modified within racyWindow of a poll also has its content hashed, and on
// the next poll a file hashed last time is hashed again and compared. Once
// a poll sees a file's time older than the window, any later write must
// move its time, and hashing stops.

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// debounceQuiet is how long a burst of events must have been quiet
	// for its reload to start: an editor's write and rename come within
	// microseconds of each other.
	debounceQuiet = 5 * time.Millisecond
	// debounceMax bounds the wait for quiet: a file written again and
	// again is still reloaded at least this often.
	debounceMax = 100 * time.Millisecond
	// safetyPoll is how often the files are polled even with events.
	safetyPoll = 10 * time.Second
)

// events is a source of file events (watch_linux.go).
type events interface {
	// C receives a value after something changed in a watched
	// directory; it holds one at most, for any number of events.
	C() <-chan struct{}
	// Watch makes the watched directories those a load of paths reads,
	// and reports whether every one is watched, or why not.
	Watch(paths []string) (bool, error)
	// Done is closed when the events end: after Close, or broken.
	Done() <-chan struct{}
	// Close ends the events and waits for their goroutine.
	Close()
}

// watcher reloads the files when they change, from events and polls.
type watcher struct {
	paths []string
	poll  time.Duration // without events
	log   *slog.Logger
	ev    events // nil: none
	// complete says every directory a load reads is watched: polls are
	// then only the safety net.
	complete bool
	stamp    filesStamp
}

// newWatcher starts watching paths, with events from newEvents if they
// can be had, and stamps the files: a change made from now on is seen.
// Call it before the first load.
func newWatcher(paths []string, poll time.Duration, newEvents func() (events, error), log *slog.Logger) *watcher {
	w := &watcher{paths: paths, poll: poll, log: log}
	ev, err := newEvents()
	if err != nil {
		log.Warn("no file events; polling the files instead", "every", poll, "err", err)
	} else {
		// Taken as complete, so that a first watch that is not says so.
		w.ev, w.complete = ev, true
		w.watch()
	}
	w.stamp, _, _ = pollFiles(paths, nil, time.Now())
	return w
}

// watch watches what a load reads now, and says so when that changes
// whether polling is the fallback or the safety net.
func (w *watcher) watch() {
	complete, err := w.ev.Watch(w.paths)
	switch {
	case w.complete && !complete:
		w.log.Warn("some directories are not watched; polling the files", "every", w.poll, "err", err)
	case !w.complete && complete:
		w.log.Debug("watching the files' directories for changes", "safety poll every", max(w.poll, safetyPoll))
	}
	w.complete = complete
}

// interval is how long to the next poll.
func (w *watcher) interval() time.Duration {
	if w.ev != nil && w.complete {
		return max(w.poll, safetyPoll)
	}
	return w.poll
}

// run calls reload after each change until ctx ends, then stops the
// events. It runs in one goroutine; reload runs in it.
func (w *watcher) run(ctx context.Context, reload func()) {
	defer w.close()
	t := time.NewTimer(w.interval())
	defer t.Stop()
	for {
		var evC, evDone <-chan struct{}
		if w.ev != nil {
			evC, evDone = w.ev.C(), w.ev.Done()
		}
		select {
		case <-ctx.Done():
			return
		case <-evDone:
			w.log.Warn("file events ended; polling the files instead", "every", w.poll)
			w.close()
			t.Reset(w.interval())
			continue
		case <-evC:
			if !debounce(ctx, evC, debounceQuiet, debounceMax) {
				return
			}
			w.watch()
			// The next poll stamps the files afresh rather than compare:
			// what events saw is being read now, and stamping here would
			// hash every file written in the last racyWindow, on every
			// reload. A change events miss right after this is seen by
			// the poll after that one.
			w.stamp = nil
		case <-t.C:
			s, changed, err := pollFiles(w.paths, w.stamp, time.Now())
			t.Reset(w.interval())
			if err != nil {
				continue // a path briefly missing: try again next poll
			}
			w.stamp = s
			if !changed {
				continue
			}
			if w.ev != nil {
				w.watch()
				select {
				case <-w.ev.C(): // the events saw it too, and this reload is theirs
				default:
					if w.complete {
						w.log.Info("a change seen by polling, not by file events (a network filesystem?)")
					}
				}
			}
		}
		reload()
	}
}

// close ends the events, if any.
func (w *watcher) close() {
	if w.ev != nil {
		w.ev.Close()
		w.ev, w.complete = nil, false
	}
}

// debounce waits for the events on c to be quiet for quiet, or for max
// after its call, whichever is first. It reports false if ctx ended
// first.
func debounce(ctx context.Context, c <-chan struct{}, quiet, max time.Duration) bool {
	deadline := time.Now().Add(max)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-c:
			d := min(quiet, time.Until(deadline))
			if d <= 0 {
				return true
			}
			t.Reset(d)
		}
	}
}

// watchDirs lists the directories whose events may change what a load
// of paths reads: each directory given and its subdirectories (those a
// load walks), and the directory of each file given. targets are the
// directories that symlinked files point into.
func watchDirs(paths []string) (dirs, targets []string) {
	seen, seenTarget := map[string]bool{}, map[string]bool{}
	addTarget := func(link string) {
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			return
		}
		if d := filepath.Dir(real); !seenTarget[d] {
			seenTarget[d] = true
			targets = append(targets, d)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil || !info.IsDir() {
			// A file, or nothing yet: its directory tells when it comes.
			if d := filepath.Dir(root); !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
			if li, err := os.Lstat(root); err == nil && li.Mode()&fs.ModeSymlink != 0 {
				addTarget(root)
			}
			continue
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: a poll reports it
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.IsDir():
				if !seen[p] {
					seen[p] = true
					dirs = append(dirs, p)
				}
			case d.Type()&fs.ModeSymlink != 0 && isManifest(p):
				addTarget(p)
			}
			return nil
		})
	}
	return dirs, targets
}

// racyWindow is longer than the coarsest timestamp granularity in use
// (2 s, FAT) plus the lag of a coarse clock.
const racyWindow = 3 * time.Second

// fileStamp is what a poll saw of one file.
type fileStamp struct {
	size  int64
	mtime time.Time
	// sum is the content's hash, kept while the file is racy (hashed).
	sum    [sha256.Size]byte
	hashed bool
}

// filesStamp maps each file's path to its stamp.
type filesStamp map[string]fileStamp

// pollFiles stats the files under paths at now and says whether any
// changed since prev, as the package comment describes. A nil prev is the
// first poll: nothing is reported changed. An unreadable path is an error,
// and the stamps of the rest are still returned.
func pollFiles(paths []string, prev filesStamp, now time.Time) (filesStamp, bool, error) {
	next := filesStamp{}
	changed := false
	var errs []error
	for _, root := range paths {
		files, err := filesIn(root) // the files a load reads
		if err != nil {
			errs = append(errs, err)
		}
		for _, path := range files {
			st, err := statFile(path, prev[path], now)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			last, seen := prev[path]
			if !seen || st.size != last.size || !st.mtime.Equal(last.mtime) || (last.hashed && st.sum != last.sum) {
				changed = true
			}
			// Old enough: a later write moves the time, no need to hash.
			if st.hashed && now.Sub(st.mtime) >= racyWindow {
				st.hashed, st.sum = false, [sha256.Size]byte{}
			}
			next[path] = st
		}
	}
	if len(next) != len(prev) {
		changed = true // a file removed (one added was seen above)
	}
	if prev == nil {
		changed = false
	}
	return next, changed, errors.Join(errs...)
}

// statFile stamps the file at path (following a symlink, as a load reads
// through it), hashing it when it is racy at now or was at the last poll.
func statFile(path string, last fileStamp, now time.Time) (fileStamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{size: info.Size(), mtime: info.ModTime()}
	if now.Sub(st.mtime) < racyWindow || last.hashed {
		if st.sum, err = hashFile(path); err != nil {
			return fileStamp{}, err
		}
		st.hashed = true
	}
	return st, nil
}

func hashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}
