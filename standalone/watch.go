// This file notices changed files.

package standalone

// Standalone mode sees an edit by polling: every poll lists the files a
// load reads (filesIn) and stats them. A file is changed when it appears,
// disappears, or its size or modification time differs from the last
// poll. Polling keeps standalone mode free of platform watch APIs and
// works the same on every filesystem, bind mounts included.
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
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"time"
)

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
