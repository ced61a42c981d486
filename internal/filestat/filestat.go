// Package filestat reads what os.FileInfo keeps only in its system-specific part, and
// names a file's type in the words every error about a file that is not a regular one uses.
package filestat

import "io/fs"

// TypeName names, in words and with its article, the type of a file that is not a regular
// one: FileMode's own string of the type bits ("p---------") reads as a file of no
// permissions.
func TypeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "a file of type " + t.String()
	}
}
