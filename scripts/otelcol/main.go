// Command otelcol is a minimal OpenTelemetry Collector for the tests and the trace
// pictures (scripts/ensure-otelcol builds it from the Go module proxy): the OTLP
// receiver (gRPC and HTTP), the file exporter (JSON lines the tests read back) and
// the debug exporter. Nothing else is compiled in.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func components() (otelcol.Factories, error) {
	var err error
	factories := otelcol.Factories{}
	factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		fileexporter.NewFactory(),
		debugexporter.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	// The collector's own telemetry (its logs; the tests turn its metrics off).
	factories.Telemetry = otelconftelemetry.NewFactory()
	return factories, nil
}

func main() {
	info := component.BuildInfo{
		Command:     "otelcol-user-groups",
		Description: "Minimal OpenTelemetry Collector for pulumi-user-groups' tests (OTLP in, file and debug out)",
		Version:     version,
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
