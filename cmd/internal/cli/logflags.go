// This file implements the process log's flags.

package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// LogFlags choose the process log's level and format.
type LogFlags struct {
	Level  *string // -log-level
	Format *string // -log-format
}

// AddLogFlags adds -log-level and -log-format.
func AddLogFlags(fs *flag.FlagSet) *LogFlags {
	return &LogFlags{
		Level:  fs.String("log-level", "info", "least severe log `level` written: debug, info, warn or error"),
		Format: fs.String("log-format", "text", "log `format`: text (key=value) or json (one object per line)"),
	}
}

// Logger builds the process log on w. It never logs secrets: tokens and
// keys are read from files and only their file names are logged.
func (f *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.Level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", *f.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *f.Format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", *f.Format)
}
