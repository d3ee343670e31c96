// Command bench-fn-go: a KRM function for the benchmarks, built as the
// catalog's functions are (Go, gopkg.in/yaml.v3, CGO_ENABLED=0, static). It
// reads the ResourceList on stdin, adds the label bench.krm.dev/touched:
// "true" to every item and writes the list back: the start-up (exec, page
// faults, the Go runtime and package init) and the YAML work of a real
// function, without its business logic.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// child returns the value under key in mapping m, adding an empty mapping
// there when there is none.
func child(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

func set(m *yaml.Node, key, value string) {
	v := child(m, key)
	*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle}
}

func run() error {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("input is not a ResourceList")
	}
	items := child(doc.Content[0], "items")
	for _, item := range items.Content {
		if item.Kind == yaml.MappingNode {
			set(child(child(item, "metadata"), "labels"), "bench.krm.dev/touched", "true")
		}
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-fn-go: %v\n", err)
		os.Exit(1)
	}
}
