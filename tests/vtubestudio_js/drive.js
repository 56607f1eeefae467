// Drives facewire's VTube Studio-compatible API with VTubeStudioJS (the `vtubestudio` npm
// package), as a plugin written with it would: authenticate, list the hotkeys, trigger one,
// read the expression state, create a custom parameter and inject it. Prints one JSON line of
// what it saw; exits 1 on any error. Run by tests/api_live.rs with the package on NODE_PATH and
// the API's port in FACEWIRE_API_PORT.

const { ApiClient } = require("vtubestudio");

const port = Number(process.env.FACEWIRE_API_PORT);
const seen = {};
let token = null;

function fail(error) {
  console.error(`VTubeStudioJS: ${error && error.stack ? error.stack : error}`);
  process.exit(1);
}

// Nothing should take long against a local run.
setTimeout(() => fail("timed out"), 20000);

const client = new ApiClient({
  authTokenGetter: () => token,
  authTokenSetter: async (t) => {
    token = t;
  },
  pluginName: process.env.FACEWIRE_PLUGIN_NAME,
  pluginDeveloper: process.env.FACEWIRE_PLUGIN_DEVELOPER,
  url: `ws://127.0.0.1:${port}`,
  // Node 20's WebSocket (behind --experimental-websocket; Node 22 has it by default).
  webSocketFactory: (url) => new WebSocket(url),
});

client.on("error", (e) => fail(e));

client.on("connect", async () => {
  try {
    seen.authenticated = token !== null;
    const state = await client.apiState();
    seen.currentSessionAuthenticated = state.currentSessionAuthenticated;

    const { availableHotkeys } = await client.hotkeysInCurrentModel({});
    seen.hotkeys = availableHotkeys.map((h) => h.name);
    const smile = availableHotkeys.find((h) => h.name === "smile");
    if (!smile) throw new Error(`no smile hotkey in ${JSON.stringify(seen.hotkeys)}`);
    const triggered = await client.hotkeyTrigger({ hotkeyID: smile.hotkeyID });
    seen.triggered = triggered.hotkeyID;
    // Asked right after the trigger's answer, as plugins do.
    const { expressions } = await client.expressionState({
      details: true,
      expressionFile: "smile",
    });
    seen.smileActive = expressions.length === 1 && expressions[0].active;

    const created = await client.parameterCreation({
      parameterName: "FacewireJsTest",
      explanation: "made by the VTubeStudioJS test",
      min: 0,
      max: 10,
      defaultValue: 2,
    });
    seen.created = created.parameterName;
    await client.injectParameterData({
      faceFound: false,
      mode: "set",
      parameterValues: [
        { id: "FacewireJsTest", value: 7.5 },
        { id: "MouthOpen", value: 0.4, weight: 1 },
      ],
    });
    const value = await client.parameterValue({ name: "FacewireJsTest" });
    seen.injected = value.value;
    seen.addedBy = value.addedBy;
    const list = await client.inputParameterList();
    seen.listed = list.customParameters.some((p) => p.name === "FacewireJsTest");
    try {
      await client.parameterCreation({
        parameterName: "MouthOpen",
        explanation: "",
        min: 0,
        max: 1,
        defaultValue: 0,
      });
      seen.reservedError = null;
    } catch (e) {
      seen.reservedError = e.data ? e.data.errorID : String(e);
    }
    await client.moveModel({ timeInSeconds: 0, valuesAreRelativeToModel: false, positionX: 0.2 });
    const stats = await client.statistics();
    seen.connectedPlugins = stats.connectedPlugins;
    seen.allowedPlugins = stats.allowedPlugins;
    const deleted = await client.parameterDeletion({ parameterName: "FacewireJsTest" });
    seen.deleted = deleted.parameterName;

    console.log(JSON.stringify(seen));
    process.exit(0);
  } catch (e) {
    fail(e);
  }
});
