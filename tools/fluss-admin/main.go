// Command fluss-admin creates Fluss databases and tables from a small YAML
// description, for the demo and for trying the gateway out:
//
//	fluss-admin create-tables -bootstrap 127.0.0.1:9123 -file scripts/demo/tables.yaml
//
// The file lists tables with their columns (Fluss SQL type names), primary
// key, partition keys, bucket keys, bucket count and properties:
//
//	tables:
//	  - table: shop.customers
//	    columns:
//	      - {name: id, type: STRING NOT NULL}
//	      - {name: amount, type: "DECIMAL(10,2)"}
//	    primary_key: [id]
//	    buckets: 3
//
// Quote a type with a comma in YAML flow style ("DECIMAL(10,2)"). Databases
// are created as needed; a table that exists already is left as it is.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/fluss"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create-tables" {
		fmt.Fprintln(stderr, "usage: fluss-admin create-tables -bootstrap HOST:PORT[,HOST:PORT] -file TABLES.yaml")
		return 2
	}
	fs := flag.NewFlagSet("fluss-admin create-tables", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", os.Getenv("FLUSS_BOOTSTRAP"), "Fluss bootstrap address(es), comma-separated (default env FLUSS_BOOTSTRAP)")
	file := fs.String("file", "", "YAML file describing the tables")
	timeout := fs.Duration("timeout", 2*time.Minute, "upper bound for the whole command")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *bootstrap == "" || *file == "" {
		fmt.Fprintln(stderr, "fluss-admin: -bootstrap and -file are required")
		return 2
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(stderr, "fluss-admin:", err)
		return 1
	}
	tables, err := parseTables(data)
	if err != nil {
		fmt.Fprintf(stderr, "fluss-admin: %s: %v\n", *file, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := fluss.NewClient(fluss.Config{Bootstrap: strings.Split(*bootstrap, ","), RequestTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(stderr, "fluss-admin:", err)
		return 1
	}
	defer c.Close()
	if err := createTables(ctx, c, tables, stdout); err != nil {
		fmt.Fprintln(stderr, "fluss-admin:", err)
		return 1
	}
	return 0
}

// tableFile is the YAML description.
type tableFile struct {
	Tables []tableSpec `yaml:"tables"`
}

type tableSpec struct {
	Table         string            `yaml:"table"`
	Columns       []columnSpec      `yaml:"columns"`
	PrimaryKey    []string          `yaml:"primary_key"`
	PartitionKeys []string          `yaml:"partition_keys"`
	BucketKeys    []string          `yaml:"bucket_keys"`
	Buckets       int               `yaml:"buckets"`
	Properties    map[string]string `yaml:"properties"`
	Comment       string            `yaml:"comment"`
}

type columnSpec struct {
	Name    string `yaml:"name"`
	Type    string `yaml:"type"`
	Comment string `yaml:"comment"`
}

// table is one parsed table to create.
type table struct {
	path fluss.TablePath
	desc fluss.TableDescriptor
}

func parseTables(data []byte) ([]table, error) {
	var f tableFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	if len(f.Tables) == 0 {
		return nil, errors.New("no tables listed")
	}
	out := make([]table, 0, len(f.Tables))
	for i, s := range f.Tables {
		path, err := fluss.ParseTablePath(s.Table)
		if err != nil {
			return nil, fmt.Errorf("tables[%d].table: %w", i, err)
		}
		if len(s.Columns) == 0 {
			return nil, fmt.Errorf("tables[%d] (%s): no columns", i, s.Table)
		}
		t := table{path: path}
		t.desc = fluss.TableDescriptor{
			Schema:        fluss.Schema{PrimaryKey: s.PrimaryKey},
			Comment:       s.Comment,
			PartitionKeys: s.PartitionKeys,
			BucketKeys:    s.BucketKeys,
			BucketCount:   s.Buckets,
			Properties:    s.Properties,
		}
		for j, c := range s.Columns {
			typ, err := parseType(c.Type)
			if err != nil {
				return nil, fmt.Errorf("tables[%d] (%s).columns[%d] (%s): %w", i, s.Table, j, c.Name, err)
			}
			t.desc.Schema.Columns = append(t.desc.Schema.Columns, fluss.Column{Name: c.Name, Type: typ, Comment: c.Comment})
		}
		out = append(out, t)
	}
	return out, nil
}

// parseType reads a Fluss SQL type name: BOOLEAN, TINYINT, SMALLINT, INT,
// BIGINT, FLOAT, DOUBLE, STRING, BYTES, DATE, CHAR(n), BINARY(n),
// DECIMAL(p,s), TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), each optionally
// followed by NOT NULL. Composite types are not supported.
func parseType(s string) (fluss.DataType, error) {
	u := strings.ToUpper(strings.Join(strings.Fields(s), " "))
	notNull := false
	if rest, ok := strings.CutSuffix(u, " NOT NULL"); ok {
		u, notNull = rest, true
	}
	name, params := u, []int(nil)
	if i := strings.IndexByte(u, '('); i >= 0 {
		if !strings.HasSuffix(u, ")") {
			return fluss.DataType{}, fmt.Errorf("type %q: unbalanced parenthesis", s)
		}
		name = strings.TrimSpace(u[:i])
		for _, p := range strings.Split(u[i+1:len(u)-1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 0 {
				return fluss.DataType{}, fmt.Errorf("type %q: parameter %q is not a non-negative integer", s, p)
			}
			params = append(params, n)
		}
	}
	param := func(def int) (int, error) {
		switch len(params) {
		case 0:
			return def, nil
		case 1:
			return params[0], nil
		}
		return 0, fmt.Errorf("type %q: one parameter expected", s)
	}
	var (
		t   fluss.DataType
		err error
		n   int
	)
	simple := map[string]func() fluss.DataType{
		"BOOLEAN": fluss.Boolean, "TINYINT": fluss.TinyInt, "SMALLINT": fluss.SmallInt,
		"INT": fluss.Int, "INTEGER": fluss.Int, "BIGINT": fluss.BigInt, "FLOAT": fluss.Float,
		"DOUBLE": fluss.Double, "STRING": fluss.String, "BYTES": fluss.Bytes, "DATE": fluss.Date,
	}
	switch {
	case simple[name] != nil:
		if params != nil {
			return fluss.DataType{}, fmt.Errorf("type %q takes no parameters", s)
		}
		t = simple[name]()
	case name == "CHAR":
		n, err = param(1)
		t = fluss.Char(n)
	case name == "BINARY":
		n, err = param(1)
		t = fluss.Binary(n)
	case name == "TIME":
		n, err = param(0)
		t = fluss.Time(n)
	case name == "TIMESTAMP":
		n, err = param(6)
		t = fluss.Timestamp(n)
	case name == "TIMESTAMP_LTZ":
		n, err = param(6)
		t = fluss.TimestampLTZ(n)
	case name == "DECIMAL":
		p, sc := 10, 0
		switch len(params) {
		case 0:
		case 1:
			p = params[0]
		case 2:
			p, sc = params[0], params[1]
		default:
			err = fmt.Errorf("type %q: at most two parameters", s)
		}
		t = fluss.Decimal(p, sc)
	default:
		return fluss.DataType{}, fmt.Errorf("type %q is not supported", s)
	}
	if err != nil {
		return fluss.DataType{}, err
	}
	if notNull {
		t = t.NonNull()
	}
	return t, nil
}

// createTables creates the databases and tables, skipping those that exist,
// and waits until the buckets of non-partitioned tables have leaders.
func createTables(ctx context.Context, c *fluss.Client, tables []table, out io.Writer) error {
	dbs := make(map[string]bool)
	for _, t := range tables {
		if !dbs[t.path.Database] {
			if err := c.CreateDatabase(ctx, t.path.Database, true); err != nil {
				return fmt.Errorf("create database %s: %w", t.path.Database, err)
			}
			dbs[t.path.Database] = true
		}
		exists, err := c.TableExists(ctx, t.path)
		if err != nil {
			return fmt.Errorf("check table %s: %w", t.path, err)
		}
		if exists {
			fmt.Fprintf(out, "table %s exists\n", t.path)
			continue
		}
		if err := c.CreateTable(ctx, t.path, &t.desc, true); err != nil {
			return fmt.Errorf("create table %s: %w", t.path, err)
		}
		if !t.desc.IsPartitioned() {
			if err := c.WaitForTableLeaders(ctx, t.path); err != nil {
				return fmt.Errorf("wait for the leaders of %s: %w", t.path, err)
			}
		}
		fmt.Fprintf(out, "table %s created\n", t.path)
	}
	return nil
}
