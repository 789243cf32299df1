// examples/tested-stack: a user's own stack and its tests, run as they are (they
// import pulumi-user-groups/testing by name, as a user's would). Needs the engine.
import "../../examples/tested-stack/stack.test";
import "../../examples/tested-stack/mocks.test";
