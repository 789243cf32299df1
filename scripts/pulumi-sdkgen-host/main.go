// pulumi-sdkgen-host: a Pulumi language host that does one thing, generate SDKs,
// so that `pulumi package gen-sdk --language go|python|dotnet` works on a
// machine whose Go module proxy does not serve Pulumi's own Go, Python and .NET
// language hosts (sdk/go/pulumi-language-go, sdk/python/cmd/pulumi-language-python
// and pulumi-dotnet answer 403 here). It runs the code generators those hosts
// run, from pkg/v3 v3.206.0: it still holds the .NET generator (v3.259.0, the
// engine's, no longer does: it moved to pulumi-dotnet), and it is the version
// Pulumi YAML v1.25.0 builds with, so both share one Go build cache.
// scripts/ensure-sdkgen-hosts installs it as pulumi-language-go, -python and
// -dotnet in a cache directory of its own; every other language-host call is
// answered "unimplemented".
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	dotnetgen "github.com/pulumi/pulumi/pkg/v3/codegen/dotnet"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	pygen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The .NET generator downloads the package's logo (Pulumi's own when the schema
// names none) from GitHub. This host never goes to the network: every HTTP
// request it makes is answered with a 1x1 transparent PNG, which becomes the
// SDK's logo.png.
type placeholderLogo struct{}

var onePixelPNG, _ = base64.StdEncoding.DecodeString(
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

func (placeholderLogo) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Status:     "200 OK",
		Header:     http.Header{"Content-Type": []string{"image/png"}},
		Body:       io.NopCloser(bytes.NewReader(onePixelPNG)),
		Request:    req,
	}, nil
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	language string
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: "3.206.0"}, nil
}

func (h *host) GeneratePackage(
	ctx context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	loader, err := schema.NewLoaderClient(req.LoaderTarget)
	if err != nil {
		return nil, err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.Schema), &spec); err != nil {
		return nil, err
	}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	response := &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}
	if diags.HasErrors() {
		return response, nil
	}
	var files map[string][]byte
	switch h.language {
	case "go":
		files, err = gogen.GeneratePackage("pulumi-language-go", pkg, req.LocalDependencies)
	case "python":
		files, err = pygen.GeneratePackage("pulumi-language-python", pkg, req.ExtraFiles, loader)
	case "dotnet":
		files, err = dotnetgen.GeneratePackage("pulumi-language-dotnet", pkg, req.ExtraFiles, req.LocalDependencies)
	default:
		err = fmt.Errorf("pulumi-sdkgen-host generates go, python and dotnet SDKs, not %q", h.language)
	}
	if err != nil {
		return nil, err
	}
	for name, data := range files {
		path := filepath.Join(req.Directory, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
	}
	return response, nil
}

func main() {
	http.DefaultTransport = placeholderLogo{}
	http.DefaultClient.Transport = placeholderLogo{}
	// Installed as pulumi-language-<language>; the engine's address comes last among the arguments.
	language := strings.TrimPrefix(filepath.Base(os.Args[0]), "pulumi-language-")
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(server *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(server, &host{language: language})
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen-host: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-sdkgen-host: %v\n", err)
		os.Exit(1)
	}
}
