package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// The public packages (windows, config, parser, exporter and those beneath them) are the
// lower layers of the house: none imports a package under internal/, and exporter imports
// nothing of this module, so that what they expose is theirs (DESIGN.md, The house).
func TestPublicPackagesImportNoInternal(t *testing.T) {
	const module = "github.com/logwindow/logwindow_exporter/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../windows/...", "../config/...", "../parser/...", "../exporter/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		seen++
		for imp := range strings.FieldsSeq(imports) {
			rel, ours := strings.CutPrefix(imp, module)
			switch {
			case ours && strings.HasPrefix(rel, "internal/"):
				t.Errorf("%s imports %s", pkg, imp)
			case ours && strings.HasSuffix(pkg, "/exporter"):
				t.Errorf("%s imports %s: the exposition knows nothing of where its samples come from", pkg, imp)
			}
		}
	}
	if seen < 9 {
		t.Fatalf("go list named %d packages:\n%s", seen, out)
	}
}
