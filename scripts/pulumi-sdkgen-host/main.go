// pulumi-sdkgen-host: a Pulumi language host that does one thing, generate SDKs,
// so that `pulumi package gen-sdk --language go|python` works on a machine whose
// Go module proxy does not serve Pulumi's own Go and Python language hosts
// (sdk/go/pulumi-language-go and sdk/python/cmd/pulumi-language-python answer
// 403 here). It runs the code generators those hosts run, from pkg/v3 at the
// engine's version. scripts/ensure-sdkgen-hosts installs it as
// pulumi-language-go and pulumi-language-python in a cache directory of its own;
// every other language-host call is answered "unimplemented".
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	pygen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	language string
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: "3.259.0"}, nil
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
	default:
		err = fmt.Errorf("pulumi-sdkgen-host generates go and python SDKs, not %q", h.language)
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
