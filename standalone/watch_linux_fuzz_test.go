// This file implements the fuzz target of the inotify event decoder.

package standalone

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzInotifyEvents gives relevant, which decodes a read of inotify
// events, any bytes (it must not panic, whatever the lengths say), and
// then one well-formed event laid out as the kernel lays it out (the name
// NUL-padded to a multiple of 16), whose answer must be the rule's in
// relevant's doc, worked out here from the fields.
func FuzzInotifyEvents(f *testing.F) {
	f.Add([]byte{}, int32(1), uint32(unix.IN_MODIFY), "routes.yaml", false)
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255}, int32(2), uint32(unix.IN_CREATE), ".routes.yaml.swp", false)
	f.Add([]byte{1, 0, 0, 0}, int32(3), uint32(unix.IN_MOVED_TO|unix.IN_ISDIR), "sub", false)
	f.Add([]byte(nil), int32(4), uint32(unix.IN_CREATE), "..2026_11_29", false)
	f.Add([]byte(nil), int32(5), uint32(unix.IN_Q_OVERFLOW), "", false)
	f.Add([]byte(nil), int32(6), uint32(unix.IN_CLOSE_WRITE), "anything", true)
	f.Add([]byte(nil), int32(7), uint32(unix.IN_IGNORED), "", false)
	f.Fuzz(func(t *testing.T, raw []byte, wd int32, mask uint32, name string, all bool) {
		w := &inotify{all: map[int32]bool{}}
		w.relevant(raw)

		name = strings.ReplaceAll(name, "\x00", "")
		if len(name) > 255 {
			name = name[:255]
		}
		padded := 0
		if name != "" {
			padded = (len(name) + 1 + 15) / 16 * 16
		}
		ev := make([]byte, unix.SizeofInotifyEvent+padded)
		binary.NativeEndian.PutUint32(ev[0:], uint32(wd))
		binary.NativeEndian.PutUint32(ev[4:], mask)
		binary.NativeEndian.PutUint32(ev[12:], uint32(padded))
		copy(ev[unix.SizeofInotifyEvent:], name)

		w = &inotify{all: map[int32]bool{}}
		if all {
			w.all[wd] = true
		}
		want := mask&(unix.IN_IGNORED|unix.IN_Q_OVERFLOW|unix.IN_ISDIR) != 0 || name == "" ||
			isManifest(name) || strings.HasPrefix(name, "..") || all
		if got := w.relevant(ev); got != want {
			t.Fatalf("event wd %d mask %#x name %q (all %v): relevant %v, want %v", wd, mask, name, all, got, want)
		}
		if mask&unix.IN_IGNORED != 0 && len(w.all) != 0 {
			t.Fatalf("IN_IGNORED left watch %d in all", wd)
		}
	})
}
