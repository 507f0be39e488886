// A stand-in for the Python extension in the end-to-end test (there is no
// marketplace offline). It implements only what graphlife reads through
// @vscode/python-extension: the active environment, the environments it knows,
// resolving one to an executable, and the change event, plus the `python.setInterpreter` picker.
const vscode = require("vscode");

function activate(context) {
  const changed = new vscode.EventEmitter();
  const offered = () => vscode.workspace.getConfiguration("fakePython").get("interpreters", []);
  let active = offered()[0];
  context.subscriptions.push(
    changed,
    vscode.commands.registerCommand("python.setInterpreter", async () => {
      const pick = await vscode.window.showQuickPick(offered(), { placeHolder: "Select Interpreter (fake Python extension)" });
      if (!pick) return;
      active = pick;
      changed.fire({ id: pick, path: pick, resource: undefined });
    }),
  );
  return {
    environments: {
      // The environments it knows (graphlife's interpreter picker lists them).
      get known() {
        return offered().map((p) => ({ id: p, path: p }));
      },
      getActiveEnvironmentPath: () => ({ id: active, path: active }),
      resolveEnvironment: async (environment) => {
        const p = typeof environment === "string" ? environment : environment && environment.path;
        return p ? { id: p, path: p, executable: { uri: vscode.Uri.file(p) } } : undefined;
      },
      onDidChangeActiveEnvironmentPath: changed.event,
    },
  };
}

module.exports = { activate };
