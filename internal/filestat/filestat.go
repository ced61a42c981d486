// Package filestat reads what os.FileInfo keeps only in its system-specific part, and
// names a file's type in the words every error about a file that is not a regular one uses.
package filestat

import (
	"io/fs"

	"github.com/logwindow/logwindow_exporter/config"
)

// TypeName names, in words and with its article, the type of a file that is not a regular
// one, as config.FileTypeName does: the rule file's error and every other about such a
// file use the same words, and config, a public package, imports nothing internal.
func TypeName(m fs.FileMode) string { return config.FileTypeName(m) }
