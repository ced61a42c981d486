package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// podLabels label every series of a -node run by the pod whose log it came from; the
// checks count the node as a whole, so series are summed over them.
var podLabels = []string{"namespace", "pod"}

// criTime is the wrapper time of the pod logs' CRI lines; the rules read their own.
const criTime = "2024-03-01T12:00:00.000000000Z"

// podLogs lays the logs at paths out as a node's /var/log/pods under root, one pod each
// (in two namespaces), its nginx container's log 0.log in CRI lines as the container
// runtime writes it, and returns their paths.
func podLogs(root string, paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		ns := []string{"web", "shop"}[i%2]
		dir := filepath.Join(root, fmt.Sprintf("%s_nginx-%d_%08x-0000-4000-8000-%012x", ns, i+1, i+1, i+1), "nginx")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		out[i] = filepath.Join(dir, "0.log")
		if err := wrapCRI(p, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// wrapCRI copies src to dst with each line wrapped as a CRI line of stdout.
func wrapCRI(src, dst string) error {
	return rewriteLines(src, dst, func(line, b []byte) ([]byte, error) {
		return append(append(b, criTime+" stdout F "...), line...), nil
	})
}

// nodeInput is the one input of a node's exporter over the pod logs under root, its files
// shared by shards followers when more than one, and the labels podLabels every rule gets
// from its path captures; formatKeys are the example input's log format keys and values.
func nodeInput(root string, shards int, formatKeys []string) (*yaml.Node, *yaml.Node) {
	in := mapping("name", "nginx", "path", filepath.Join(root, "*_*_*", "nginx", "*.log"), "wrapper", "cri", "start_at", "beginning",
		"path_captures", "^"+regexp.QuoteMeta(root)+"/(?P<namespace>[^_/]+)_(?P<pod>[^_/]+)_[^/]+/(?P<container>[^/]+)/")
	if shards > 1 {
		setKey(in, "shards", scalar(strconv.Itoa(shards)))
	}
	for i := 0; i+1 < len(formatKeys); i += 2 {
		setKey(in, formatKeys[i], scalar(formatKeys[i+1]))
	}
	labels := mapping("namespace", "${namespace}", "pod", "${pod}")
	return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{in}}, labels
}

// addLabels adds the label templates of labels to every rule of root.
func addLabels(root, labels *yaml.Node) error {
	rules := getKey(root, "rules")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return fmt.Errorf("no list of rules")
	}
	for _, r := range rules.Content {
		l := getKey(r, "labels")
		if l == nil {
			l = mapping()
			setKey(r, "labels", l)
		}
		if l.Kind == yaml.AliasNode {
			l = l.Alias
		}
		for i := 0; i+1 < len(labels.Content); i += 2 {
			setKey(l, labels.Content[i].Value, labels.Content[i+1])
		}
	}
	return nil
}
