// The four operations of `/api/user` by HTTP method, with their names in the
// interface document. Plain data, no zod: error messages need the titles, and
// loading them must not load the schemas (see provider/index.ts).

/** The HTTP methods of `/api/user`, one per operation. */
export type ApiMethod = "GET" | "PUT" | "POST" | "DELETE";

export const OPERATION_TITLES = {
  GET: "Get User",
  PUT: "Update User",
  POST: "Create User (rotate token)",
  DELETE: "Delete User",
} as const satisfies Record<ApiMethod, string>;
