package mapping

import (
	"context"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/fluss-kafka/gateway/schemaregistry"
)

// Compiling writer schemas: .proto text or a base64 FileDescriptorProto
// into a file descriptor, once per text.

type pbCompiled struct {
	file protoreflect.FileDescriptor
	err  string
}

var pbFiles struct {
	mu sync.Mutex
	m  map[string]*pbCompiled
}

// pbCompile compiles a writer schema, once per text (and dependencies).
func pbCompile(s *schemaregistry.Schema) *pbCompiled {
	var kb strings.Builder
	kb.WriteString(s.Text)
	deps := make([]string, 0, len(s.Deps))
	for k := range s.Deps {
		deps = append(deps, k)
	}
	sort.Strings(deps)
	for _, k := range deps {
		kb.WriteString("\x00")
		kb.WriteString(k)
		kb.WriteString("\x00")
		kb.WriteString(s.Deps[k])
	}
	key := kb.String()
	pbFiles.mu.Lock()
	c := pbFiles.m[key]
	pbFiles.mu.Unlock()
	if c != nil {
		return c
	}
	c = &pbCompiled{}
	fd, err := pbCompileFile(s.Text, s.Deps)
	if err != nil {
		c.err = err.Error()
	} else {
		c.file = fd
	}
	pbFiles.mu.Lock()
	if pbFiles.m == nil || len(pbFiles.m) >= pbMaxFiles {
		pbFiles.m = map[string]*pbCompiled{}
	}
	pbFiles.m[key] = c
	pbFiles.mu.Unlock()
	return c
}

const pbMainFile = "fluss-gateway/writer-schema.proto"

func pbCompileFile(text string, deps map[string]string) (protoreflect.FileDescriptor, error) {
	name := pbMainFile
	fdp := pbParseDescriptor(text)
	if fdp != nil && fdp.GetName() != "" {
		name = fdp.GetName()
	}
	source := func(path, text string) protocompile.SearchResult {
		if fdp := pbParseDescriptor(text); fdp != nil {
			fdp.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fdp}
		}
		return protocompile.SearchResult{Source: strings.NewReader(text)}
	}
	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		switch {
		case path == name:
			return source(path, text), nil
		case deps[path] != "":
			return source(path, deps[path]), nil
		case pbBuiltinFiles[path] != "":
			return protocompile.SearchResult{Source: strings.NewReader(pbBuiltinFiles[path])}, nil
		}
		return protocompile.SearchResult{}, fmt.Errorf("import %q: not among the schema's references", path)
	}))
	comp := protocompile.Compiler{Resolver: resolver, MaxParallelism: 1}
	files, err := comp.Compile(context.Background(), name)
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, errors.New("no file compiled")
	}
	return files[0], nil
}

// pbParseDescriptor reads text as a base64 FileDescriptorProto, or
// returns nil when it is not one (.proto text never is valid base64).
func pbParseDescriptor(text string) *descriptorpb.FileDescriptorProto {
	t := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, text)
	if t == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(t); err != nil {
			return nil
		}
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(raw, fdp) != nil {
		return nil
	}
	return fdp
}

// pbBuiltinFiles are the imports Confluent's serializers never register as
// references (they treat confluent/* and google/type/* as built in). The
// texts are the .proto files under proto/, keyed by their import path.
var pbBuiltinFiles = pbLoadBuiltins()

//go:embed proto
var pbBuiltinFS embed.FS

func pbLoadBuiltins() map[string]string {
	m := map[string]string{}
	err := fs.WalkDir(pbBuiltinFS, "proto", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".proto" {
			return err
		}
		b, err := pbBuiltinFS.ReadFile(p)
		if err != nil {
			return err
		}
		m[strings.TrimPrefix(p, "proto/")] = string(b)
		return nil
	})
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return m
}
