// Test-only: debugpy's adapter for the `debugpy` type, and a command that puts a
// breakpoint on the line marked `# stop here` in train_debug.py and starts debugging.
const vscode = require("vscode");

function activate(context) {
  const python = () => vscode.workspace.getConfiguration("graphlifeTest").get("python", "python3");
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory("debugpy", {
      createDebugAdapterDescriptor: () => new vscode.DebugAdapterExecutable(python(), ["-m", "debugpy.adapter"]),
    }),
    vscode.commands.registerCommand("graphlifeTest.debugStopHere", async () => {
      const folder = vscode.workspace.workspaceFolders[0];
      const uri = vscode.Uri.joinPath(folder.uri, "train_debug.py");
      const text = (await vscode.workspace.fs.readFile(uri)).toString();
      const line = text.split("\n").findIndex((l) => l.includes("# stop here"));
      vscode.debug.addBreakpoints([new vscode.SourceBreakpoint(new vscode.Location(uri, new vscode.Position(line, 0)))]);
      await vscode.debug.startDebugging(folder, {
        type: "debugpy", request: "launch", name: "train_debug", program: uri.fsPath, python: python(),
        console: "internalConsole", justMyCode: true,
      });
    }),
  );
}

module.exports = { activate };
