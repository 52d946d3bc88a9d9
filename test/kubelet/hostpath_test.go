package kubelet

import "testing"

// HostPath maps a mount path and what lies under it, the longest mount
// path winning and only whole path components matching, and leaves other
// paths alone, as it does outside a container.
func TestHostPath(t *testing.T) {
	t.Setenv(envMounts, `{"/var/run/tunnelgate":"/pods/p/volumes/run/sub","/var/run/tunnelgate/keys/":"/pods/p/volumes/keys","/etc/cfg":"/pods/p/volumes/cfg"}`)
	for in, want := range map[string]string{
		"/var/run/tunnelgate":                  "/pods/p/volumes/run/sub",
		"/var/run/tunnelgate/origin.sock":      "/pods/p/volumes/run/sub/origin.sock",
		"/var/run/tunnelgate/keys":             "/pods/p/volumes/keys",
		"/var/run/tunnelgate/keys/a/b":         "/pods/p/volumes/keys/a/b",
		"/var/run/tunnelgatex/origin.sock":     "/var/run/tunnelgatex/origin.sock",
		"/var/run":                             "/var/run",
		"/etc/cfg/../secret":                   "/etc/cfg/../secret", // not under /etc/cfg
		"/etc/cfg/./a//b":                      "/pods/p/volumes/cfg/a/b",
		"relative/var/run/tunnelgate/x":        "relative/var/run/tunnelgate/x",
		"unix:/var/run/tunnelgate/origin.sock": "unix:/var/run/tunnelgate/origin.sock",
	} {
		if got := HostPath(in); got != want {
			t.Errorf("HostPath(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv(envMounts, "")
	if got := HostPath("/var/run/tunnelgate/origin.sock"); got != "/var/run/tunnelgate/origin.sock" {
		t.Errorf("outside a container: %q", got)
	}
}
