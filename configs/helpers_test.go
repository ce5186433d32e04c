package configs

import (
	"reflect"
	"strings"
	"time"
)

// yamlKeys lists every key path of Config as written in
// docs/configuration.md: "writer.linger", "routes[].value.format".
func yamlKeys() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			path := prefix + name
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]():
				out = append(out, path)
				walk(path+".", ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				out = append(out, path)
				walk(path+"[].", ft.Elem())
			default:
				out = append(out, path)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return out
}
