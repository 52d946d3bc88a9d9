package gobuild

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	got := strings.Join(Args("1.2.3", "/out/bin"), " ")
	want := "build -trimpath -buildvcs=false -ldflags -s -w -X main.version=1.2.3 -o /out/bin/ " +
		"github.com/tunnelgate/tunnelgate/cmd/tunnelgate github.com/tunnelgate/tunnelgate/cmd/tunnelgate-proxy"
	if got != want {
		t.Errorf("Args: %s\nwant       %s", got, want)
	}
	if !slices.Equal(Binaries(), []string{"tunnelgate", "tunnelgate-proxy"}) {
		t.Errorf("Binaries() = %v", Binaries())
	}
	if !slices.Contains(Env("arm64"), "GOARCH=arm64") || !slices.Contains(Env("arm64"), "CGO_ENABLED=0") {
		t.Errorf("Env(arm64) = %v", Env("arm64"))
	}
}

func TestBuildRefusesAVersionThatWouldSplitTheFlags(t *testing.T) {
	for _, v := range []string{"", "1.2.3 -X main.other=x", "a'b"} {
		if err := Build(context.Background(), "../..", "amd64", v, filepath.Join(t.TempDir(), "x")); err == nil {
			t.Errorf("version %q was taken", v)
		}
	}
}
