// Live streams were part of this module until they became their own (PierLive): a plugin that
// imports PierService for its LiveFeed builds as before (the plugin contract's version holds).
@_exported import PierLive
