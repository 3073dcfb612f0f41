// Package layout holds no code: its test checks the repository's layering,
// which the compiler does not.
//
//   - What a provider imports (framework/..., e2e/...) imports nothing of
//     the image factory (factory/...), which only `make images` and this
//     project's own CI use.
//   - framework/config, the config type a provider's suite loads, declares
//     nothing of how images are built: that is factory/buildspec's.
//   - The cloud provider's module depends on the container runtime's module
//     alone of this repository, and needs none of Cluster API's replace
//     lines.
package layout
