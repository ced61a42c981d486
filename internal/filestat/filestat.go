// Package filestat reads what os.FileInfo keeps only in its system-specific part.
package filestat
