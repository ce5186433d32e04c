package main

import "github.com/fluss-kafka/gateway/internal/gatewaytest"

// writerSettings are the writer keys the bench may override; empty strings
// keep the gateway's defaults.
type writerSettings struct {
	Linger, BatchSize, BufferMemory string
	LogLevel                        string // logging.level; default warn
	SchemaRegistry                  string // schema_registry.urls (the bench's fake registry); "" for none
}

// gatewayConfig is the gateway's configuration for a bench: the writer at
// its defaults unless overridden, the routes, a 30s shutdown deadline.
func gatewayConfig(bootstrap string, w writerSettings, routes string) gatewaytest.Config {
	level := w.LogLevel
	if level == "" {
		level = "warn"
	}
	return gatewaytest.Config{
		Bootstrap:    bootstrap,
		Routes:       routes,
		Linger:       w.Linger,
		BatchSize:    w.BatchSize,
		BufferMemory: w.BufferMemory,
		LogLevel:     level,
		Deadline:     "30s",

		SchemaRegistry: w.SchemaRegistry,
	}
}

// gatewayYAML renders gatewayConfig with the given ports.
func gatewayYAML(bootstrap string, kafkaPort, adminPort int, w writerSettings, routes string) string {
	return gatewayConfig(bootstrap, w, routes).YAML(kafkaPort, adminPort)
}
