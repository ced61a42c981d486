package pipeline

import (
	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// explainAll is Explain's lines, gathered: the tests look at them together.
func explainAll(cfg *config.Config, file string, maxLines int, opts Options) ([]explain.Line, error) {
	var lines []explain.Line
	err := Explain(cfg, file, maxLines, opts, func(l explain.Line) error {
		lines = append(lines, l)
		return nil
	})
	return lines, err
}
