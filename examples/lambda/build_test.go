package main

import (
	"debug/elf"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "median-lambda-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestBootstrapBuilds: the command README.md gives builds the example for
// both of Lambda's architectures, as a static Linux executable without
// symbols, the artifact provided.al2023 runs.
func TestBootstrapBuilds(t *testing.T) {
	for arch, machine := range map[string]elf.Machine{"arm64": elf.EM_AARCH64, "amd64": elf.EM_X86_64} {
		t.Run(arch, func(t *testing.T) {
			f, err := elf.Open(bootstrap(t, arch))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Machine != machine || f.Type != elf.ET_EXEC || f.OSABI != elf.ELFOSABI_NONE {
				t.Errorf("bootstrap for %s is a %v %v for %v, want an executable for %v", arch, f.Type, f.OSABI, f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("bootstrap for %s asks for a dynamic loader: it must be built with CGO_ENABLED=0", arch)
				}
			}
			if f.Section(".symtab") != nil {
				t.Errorf("bootstrap for %s keeps its symbol table: -ldflags='-s -w' is missing", arch)
			}
		})
	}
}
